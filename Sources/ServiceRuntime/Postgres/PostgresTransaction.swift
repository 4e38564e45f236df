import PostgresNIO
import YediSync

/// What a `ServicePostgres.write` body gets: the connection its transaction runs on, and a place for
/// what must happen only once the transaction committed (waking a worker, notifying a local hub).
///
/// A body has no side effects of its own before commit: it may run again (a serialization failure or a
/// deadlock re-runs the whole transaction), and a rolled-back run must leave nothing behind.
public final class PostgresTransaction: Sendable {
    public let connection: PostgresConnection
    let logger: Logger
    private let hooks = TSanVisibleMutex<[@Sendable () -> Void]>([])

    init(connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Runs `hook` after this transaction commits; never if it rolls back or is re-run (the re-run
    /// registers its own).
    public func afterCommit(_ hook: @escaping @Sendable () -> Void) {
        hooks.withLock { $0.append(hook) }
    }

    /// Runs one statement of the transaction and collects its rows.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await connection.query(query, logger: logger).collect()
    }

    func runHooks() {
        for hook in hooks.withLock({ $0 }) { hook() }
    }
}
