import Logging
import RPCCore
import YediSync

/// Keeps every log record, so tests can assert on what was (and was not) logged: an RPC server's, or a
/// whole service's started in-process.
public final class LogCapture: Sendable {
    public struct Record: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]

        /// Message and metadata as one line, for "never contains" checks.
        public var line: String { "\(message) \(metadata.sorted { $0.key < $1.key })" }
    }

    private let records = TSanVisibleMutex<[Record]>([])

    public init() {}

    public var all: [Record] { records.withLock { $0 } }

    /// Each record as one line: level, message and metadata (`key=value`, sorted by key).
    public var lines: [String] {
        all.map { record in
            let fields = record.metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            return "\(record.level) \(record.message) \(fields.joined(separator: " "))"
        }
    }

    public func logger(label: String = "test") -> Logger {
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
