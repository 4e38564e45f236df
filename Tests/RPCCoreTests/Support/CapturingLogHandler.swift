import Logging
import Synchronization

@testable import RPCCore

/// Keeps every log record, so tests can assert on what was (and was not) logged.
final class LogCapture: Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]

        /// Message and metadata as one line, for "never contains" checks.
        var line: String { "\(message) \(metadata.sorted { $0.key < $1.key })" }
    }

    private let records = TSanVisibleMutex<[Record]>([])

    var all: [Record] { records.withLock { $0 } }

    func logger(label: String = "test") -> Logger {
        Logger(label: label) { _ in Handler(capture: self) }
    }

    fileprivate func append(_ record: Record) { records.withLock { $0.append(record) } }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var merged = metadata
            if let extra = event.metadata { merged.merge(extra) { $1 } }
            capture.append(
                Record(
                    level: event.level,
                    message: "\(event.message)",
                    metadata: merged.mapValues { "\($0)" }
                )
            )
        }
    }
}
