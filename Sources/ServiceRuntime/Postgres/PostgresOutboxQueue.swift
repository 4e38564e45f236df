import Foundation
import PostgresNIO

/// The outbox on PostgreSQL, shared by every replica's worker (docs/postgres.md, "The outbox on
/// PostgreSQL").
///
/// - A worker claims up to `claimSize` due jobs in one statement (`FOR UPDATE SKIP LOCKED`), leasing them
///   to its replica until `lease` from now; a job leased to another replica, or not due, is not taken.
/// - Right before each delivery the job's lease is taken again for `lease`, only if it is still this
///   replica's: a delivery therefore always starts with a whole lease ahead (`deliveryTimeout` plus a
///   margin), however long the jobs before it in the batch took, and a job whose lease ran out while it
///   waited its turn (and that another replica may be delivering) is skipped.
/// - A delivered job is deleted, a failed one gets its attempts, its error and its next due time, and
///   loses its lease: each only by its lease holder.
/// - Leases and due times are on PostgreSQL's clock (`clock_timestamp()`), never the injected clock: they
///   coordinate processes whose clocks may differ (a development clock moved a day forward on one replica
///   would otherwise take every job in flight).
///
/// Each statement runs on its own, outside a transaction (`ServicePostgres.read`): one statement is atomic
/// by itself, and every one of them may run again harmlessly.
final class PostgresOutboxQueue: OutboxQueue {
    private let postgres: ServicePostgres
    /// The name this replica's leases carry (`--replica`); replicas must not share one.
    let replica: String
    let lease: Duration
    let claimSize: Int

    init(postgres: ServicePostgres, replica: String, lease: Duration, claimSize: Int) {
        self.postgres = postgres
        self.replica = replica
        self.lease = lease
        self.claimSize = max(1, claimSize)
    }

    func takeDueJobs(skippingPeers waitingPeers: Set<String>) async throws -> OutboxBatch {
        let replica = replica
        let lease = Self.seconds(lease)
        let waiting = waitingPeers.sorted()
        let limit = claimSize
        let logger = postgres.logger
        let jobs = try await postgres.read { connection in
            try await connection.query(
                """
                UPDATE runtime_outbox
                SET leased_until = clock_timestamp() + make_interval(secs => \(lease)), leased_by = \(replica)
                WHERE id IN (
                    SELECT id FROM runtime_outbox
                    WHERE due_at <= clock_timestamp()
                      AND (leased_until IS NULL OR leased_until < clock_timestamp())
                      AND peer <> ALL(\(waiting))
                    ORDER BY seq
                    LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED)
                RETURNING seq, id, peer, method, payload, attempts
                """, logger: logger
            )
            .collect()
            .map { row in
                let (seq, id, peer, method, payload, attempts) = try row.decode(
                    (Int64, String, String, String, ByteBuffer, Int).self)
                return (
                    seq,
                    OutboxJob(
                        id: id, peer: peer, method: method, payload: Array(payload.readableBytesView),
                        attempts: attempts)
                )
            }
        }
        return OutboxBatch(jobs: jobs.sorted { $0.0 < $1.0 }.map(\.1), more: jobs.count == limit)
    }

    /// Takes the lease again for a whole `lease`, if the job is still here and still this replica's.
    func isStillToDeliver(_ job: OutboxJob) async throws -> Bool {
        let renewed = try await run(
            """
            UPDATE runtime_outbox SET leased_until = clock_timestamp() + make_interval(secs => \(Self.seconds(lease)))
            WHERE id = \(job.id) AND leased_by = \(replica)
            RETURNING id
            """)
        return !renewed.isEmpty
    }

    /// Only by the lease holder: had the lease run out and another replica taken the job, that replica
    /// delivers it again (the receiver's ledger applies it once) and deletes it.
    func delete(_ job: OutboxJob) async throws {
        try await run("DELETE FROM runtime_outbox WHERE id = \(job.id) AND leased_by = \(replica) RETURNING id")
    }

    func recordFailure(_ job: OutboxJob, attempts: Int, error: String, retryIn delay: Duration) async throws {
        try await run(
            """
            UPDATE runtime_outbox
            SET attempts = \(attempts), last_error = \(error),
                due_at = clock_timestamp() + make_interval(secs => \(Self.seconds(delay))),
                leased_until = NULL, leased_by = NULL
            WHERE id = \(job.id) AND leased_by = \(replica)
            RETURNING id
            """)
    }

    func retry(_ job: OutboxJob, in delay: Duration) async {
        _ = try? await run(
            """
            UPDATE runtime_outbox
            SET due_at = clock_timestamp() + make_interval(secs => \(Self.seconds(delay))),
                leased_until = NULL, leased_by = NULL
            WHERE id = \(job.id) AND leased_by = \(replica)
            RETURNING id
            """)
    }

    /// Their peer's backoff goes into the rows, so that the other replicas wait too. Failing (the
    /// database is away), the leases run out on their own.
    func giveBack(_ jobs: [OutboxJob], notBefore delay: Duration) async {
        guard !jobs.isEmpty else { return }
        _ = try? await run(
            """
            UPDATE runtime_outbox
            SET due_at = greatest(due_at, clock_timestamp() + make_interval(secs => \(Self.seconds(delay)))),
                leased_until = NULL, leased_by = NULL
            WHERE id = ANY(\(jobs.map(\.id))) AND leased_by = \(replica)
            RETURNING id
            """)
    }

    /// The rows keep each job's due time; the worker looks again at its poll.
    func nextRetry() -> ContinuousClock.Instant? { nil }

    @discardableResult
    private func run(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let logger = postgres.logger
        return try await postgres.read { connection in
            try await connection.query(query, logger: logger).collect()
        }
    }

    /// A duration as the seconds `make_interval(secs =>)` takes.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
