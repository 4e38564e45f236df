import Foundation
import GRDB
import NIOConcurrencyHelpers

/// The outbox on SQLite: one process owns the database, so the worker reads every job and keeps each
/// failed job's backoff in memory (after a restart every pending job is due at once). Nothing is leased.
final class SQLiteOutboxQueue: OutboxQueue {
    private let database: ServiceDatabase
    /// When each failed job may be tried again.
    private let retries = NIOLockedValueBox<[String: ContinuousClock.Instant]>([:])

    init(database: ServiceDatabase) {
        self.database = database
    }

    func takeDueJobs(skippingPeers waitingPeers: Set<String>) async throws -> OutboxBatch {
        let jobs = try await database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT id, peer, method, payload, attempts FROM runtime_outbox ORDER BY rowid"
            )
            .map { row in
                OutboxJob(
                    id: row["id"], peer: row["peer"], method: row["method"],
                    payload: [UInt8]((row["payload"] as Data?) ?? Data()), attempts: row["attempts"])
            }
        }
        let pending = Set(jobs.map(\.id))
        let retries = self.retries.withLockedValue { retries in
            retries = retries.filter { pending.contains($0.key) }
            return retries
        }
        let now = ContinuousClock.now
        let due = jobs.filter { job in
            !(retries[job.id].map { $0 > now } ?? false) && !waitingPeers.contains(job.peer)
        }
        return OutboxBatch(jobs: due, more: false)
    }

    /// Only an outside message can have gone since it was read (a deleted account's).
    func isStillToDeliver(_ job: OutboxJob) async throws -> Bool {
        guard OutsideMessageKind(rawValue: job.peer) != nil else { return true }
        return try await database.read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM runtime_outbox WHERE id = ?", arguments: [job.id]) == true
        }
    }

    func delete(_ job: OutboxJob) async throws {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM runtime_outbox WHERE id = ?", arguments: [job.id])
        }
        retries.withLockedValue { $0[job.id] = nil }
    }

    func recordFailure(_ job: OutboxJob, attempts: Int, error: String, retryIn delay: Duration) async throws {
        retry(job, after: delay)
        try await database.write { db in
            try db.execute(
                sql: "UPDATE runtime_outbox SET attempts = ?, last_error = ? WHERE id = ?",
                arguments: [attempts, error, job.id])
        }
    }

    func retry(_ job: OutboxJob, in delay: Duration) async {
        retry(job, after: delay)
    }

    private func retry(_ job: OutboxJob, after delay: Duration) {
        let retryAt = ContinuousClock.now + delay
        retries.withLockedValue { $0[job.id] = retryAt }
    }

    /// Nothing to hand back: the worker's backoff for their peer keeps them waiting.
    func giveBack(_ jobs: [OutboxJob], notBefore delay: Duration) async {}

    func nextRetry() -> ContinuousClock.Instant? {
        retries.withLockedValue { $0.values.min() }
    }
}
