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
/// transaction). Leases use PostgreSQL's clock: they compare replicas, whose clocks differ.
///
/// Where it errs, it errs for a short, bounded time, towards no push: a replica that dies stops renewing,
/// and its users count until its lease runs out (`lease`, 6 s; a user whose app does not subscribe again
/// elsewhere meanwhile gets no push for a message sent then); a user whose stream just closed counts until
/// the writer's next write (milliseconds), or, if that write fails, until the lease runs out.
///
/// It writes once at start (replacing what a previous life of the replica listed), then only while
/// someone has a stream open here: an idle replica writes nothing, also while the database is down.
final class PostgresStreamPresence: Service, StreamPresence {
    static let defaultLease: Duration = .seconds(6)

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
            open.formUnion(try await listedElsewhere(among: elsewhere))
        } catch {
            // Unknown counts as absent: a push too many rather than none.
            logger.debug("presence not read", metadata: ["error": "\(error)"])
        }
        return open
    }

    /// The users of `userIDs` that another replica lists under a lease that holds.
    func listedElsewhere(among userIDs: [String]) async throws -> Set<String> {
        try await postgres.read { [replica, logger] connection in
            Set(
                try await connection.execute(ListedElsewhere.self, userIDs, replica, logger: logger)
                    .map { try $0.decode(String.self) })
        }
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
                    if listed == nil { await removeDepartedReplicas() }
                    listed = open
                    renewedAt = .now
                } catch {
                    logger.debug("presence not written", metadata: ["error": "\(error)"])
                    listed = nil
                    if open.isEmpty {
                        // Nobody to keep listed: what this replica listed goes with its lease. Try again when
                        // someone subscribes (the whole list then), not on a timer: an idle replica stays idle.
                        await changed.wait(timeout: .seconds(3_600))
                    } else {
                        try? await Task.sleep(for: renewal)
                    }
                    continue
                }
            }
            // The next renewal is due `renewal` after the last one, however often changes wake the writer.
            let due = renewedAt.advanced(by: renewal) - .now
            await changed.wait(timeout: open.isEmpty ? .seconds(3_600) : max(due, .milliseconds(1)))
        }
    }

    /// One transaction: the lease renewed, then the users who came and went since `listed` (all of them,
    /// replacing what is there, when `listed` is nil). It touches this replica's rows only.
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

    /// Replicas gone for a day (renamed, scaled down) and the users they listed, in a statement of its own
    /// (never in a transaction holding this replica's rows: two such could wait on each other). Best effort.
    private func removeDepartedReplicas() async {
        _ = try? await postgres.write { tx in
            try await tx.query(
                "DELETE FROM chat_presence_replica WHERE alive_until < clock_timestamp() - interval '1 day'")
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
