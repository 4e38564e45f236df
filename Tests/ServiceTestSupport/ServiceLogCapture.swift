import Logging
import Synchronization

/// Keeps every log record of a service started in-process, so tests can assert on what its logs do
/// (and do not) say.
public final class ServiceLogCapture: Sendable {
    private let records = Mutex<[String]>([])

    public init() {}

    /// Each record as one line: level, message and metadata (sorted by key).
    public var lines: [String] { records.withLock { $0 } }

    public func logger(label: String = "test.service") -> Logger {
        Logger(label: label) { _ in Handler(capture: self) }
    }

    fileprivate func append(_ line: String) { records.withLock { $0.append(line) } }

    private struct Handler: LogHandler {
        let capture: ServiceLogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var merged = metadata
            if let extra = event.metadata { merged.merge(extra) { $1 } }
            let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            capture.append("\(event.level) \(event.message) \(fields)")
        }
    }
}
