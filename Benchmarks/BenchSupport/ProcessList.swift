import Synchronization

/// The replicas a bench started, stopped together at the end; a failover run replaces a killed one with its
/// restart, so the list is shared rather than copied.
public final class ProcessList: Sendable {
    private let processes = Mutex<[ServiceProcess]>([])

    public init() {}

    public func append(_ process: ServiceProcess) { processes.withLock { $0.append(process) } }

    public subscript(index: Int) -> ServiceProcess {
        get { processes.withLock { $0[index] } }
        set { processes.withLock { $0[index] = newValue } }
    }

    public var all: [ServiceProcess] { processes.withLock { $0 } }
    public var count: Int { processes.withLock { $0.count } }

    /// SIGTERM to each, waiting for each to exit.
    public func stopAll() { for process in all { try? process.stop() } }
}
