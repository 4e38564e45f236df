import Logging
import PostgresNIO
import ServiceLifecycle
import ServiceRuntime

/// Who has a chat stream open on any replica (docs/postgres.md, "Presence across replicas"): each
/// replica lists the users with a stream open on it in `chat_presence`, under a row of its own in
/// `chat_presence_replica` whose lease it renews while it lists anyone. A send to a match room asks this
/// before queuing pushes, so a member listening on another replica gets the message there and no push.
///
/// The list follows the hub: a user's first stream opening or last one closing wakes the writer, which
/// writes what changed since its last write (a burst of subscriptions, as after a failover, is one
/// transaction). A replica that dies stops renewing; its users stop counting when its lease runs out
/// (`lease`, 15 s: for that long a message to them queues no push, while their clients subscribe again
/// elsewhere). Leases use PostgreSQL's clock: they compare replicas, whose clocks differ.
///
/// Nothing is written while nobody has a stream open here: an idle replica writes nothing.
final class PostgresStreamPresence: Service, StreamPresence {
    static let defaultLease: Duration = .seconds(15)

    private let postgres: ServicePostgres
    private let replica: String
    private let hub: ChatEventHub
    private let logger: Logger
    private let lease: Duration
    private let changed = WakeUpSignal()

    /// - Parameters:
    ///   - replica: this process's name among the service's replicas (`--replica`), unique among them.
    ///   - lease: how long the other replicas count this one's users after its last renewal; renewed every
    ///     third of it.
    init(postgres: ServicePostgres, replica: String, hub: ChatEventHub, logger: Logger, lease: Duration = defaultLease)
    {
        self.postgres = postgres
        self.replica = replica
        self.hub = hub
        self.logger = logger
        self.lease = lease
        hub.observeKeys { [changed] in changed.signal() }
    }

    func withOpenStreams(among userIDs: [String]) async -> Set<String> {
        var open = Set(userIDs.filter { hub.isOpen(key: $0) })
        let elsewhere = userIDs.filter { !open.contains($0) }
        guard !elsewhere.isEmpty else { return open }
        do {
            let found = try await postgres.read { [replica, logger] connection in
                try await connection.execute(ListedElsewhere.self, elsewhere, replica, logger: logger)
                    .map { try $0.decode(String.self) }
            }
            open.formUnion(found)
        } catch {
            // Unknown counts as absent: a push too many, never a message nobody is told of.
            logger.debug("presence not read", metadata: ["error": "\(error)"])
        }
        return open
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { await self.keepListed() }
        // Going away: the other replicas stop counting this one's users now, not when the lease ends.
        try? await postgres.write { [replica] tx in
            try await tx.query("DELETE FROM chat_presence_replica WHERE replica = \(replica)")
        }
    }

    /// Writes the hub's users whenever they change, and renews the lease while there are any.
    private func keepListed() async {
        let renewal = lease / 3
        // nil: what the table holds for this replica is unknown (at start, after a failed write): the next
        // write replaces it all, dropping what a previous life of this replica left.
        var listed: Set<String>? = nil
        var renewedAt = ContinuousClock.now
        while !Task.isCancelled {
            let open = hub.openKeys
            if listed != open || (!open.isEmpty && renewedAt.advanced(by: renewal) <= .now) {
                do {
                    try await write(open, over: listed)
                    listed = open
                    renewedAt = .now
                } catch {
                    logger.debug("presence not written", metadata: ["error": "\(error)"])
                    listed = nil
                    try? await Task.sleep(for: renewal)
                    continue
                }
            }
            await changed.wait(timeout: open.isEmpty ? .seconds(3_600) : renewal)
        }
    }

    /// One transaction: the lease renewed, then the users who came and went since `listed` (all of them,
    /// replacing what is there, when `listed` is nil).
    private func write(_ open: Set<String>, over listed: Set<String>?) async throws {
        let added = Array(listed.map { open.subtracting($0) } ?? open)
        let removed = listed.map { Array($0.subtracting(open)) }
        let leaseSeconds = Double(lease.components.seconds) + Double(lease.components.attoseconds) / 1e18
        try await postgres.write { [replica] tx in
            try await tx.query(
                """
                INSERT INTO chat_presence_replica (replica, alive_until)
                VALUES (\(replica), clock_timestamp() + make_interval(secs => \(leaseSeconds)))
                ON CONFLICT (replica) DO UPDATE SET alive_until = EXCLUDED.alive_until
                """)
            if let removed {
                if !removed.isEmpty {
                    try await tx.query(
                        "DELETE FROM chat_presence WHERE replica = \(replica) AND user_id = ANY(\(removed))")
                }
            } else {
                try await tx.query("DELETE FROM chat_presence WHERE replica = \(replica)")
                // Replicas gone for a day (renamed, scaled down) and the users they listed.
                try await tx.query(
                    "DELETE FROM chat_presence_replica WHERE alive_until < clock_timestamp() - interval '1 day'")
            }
            if !added.isEmpty {
                try await tx.query(
                    """
                    INSERT INTO chat_presence (user_id, replica) SELECT unnest(\(added)::text[]), \(replica)
                    ON CONFLICT DO NOTHING
                    """)
            }
        }
    }

    /// $1 the users, $2 this replica: those of them listed by another replica whose lease holds.
    enum ListedElsewhere: HotStatement {
        static let parameters: [PostgresDataType] = [.textArray, .text]
        static let sql = """
            SELECT p.user_id FROM chat_presence p JOIN chat_presence_replica r ON r.replica = p.replica
            WHERE p.user_id = ANY($1) AND p.replica <> $2 AND r.alive_until > clock_timestamp()
            """
    }
}
