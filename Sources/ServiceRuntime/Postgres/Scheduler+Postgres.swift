import Foundation
import PostgresNIO

/// The scheduler inside a PostgreSQL transaction: the same operations as on SQLite, on the same
/// `runtime_scheduled_job` table, committed (or not) with the change that needs them. This process's
/// worker wakes after the commit; other replicas' workers see the job at their next look.
extension Scheduler {
    /// Adds `job` to `tx`, unless a job with its id is already scheduled (that one stays as it is).
    /// Returns whether it was added.
    @discardableResult
    public func schedule(_ job: ScheduledJob, in tx: PostgresTransaction) async throws -> Bool {
        let added =
            try await tx.execute(
                ScheduleJob.self, job.id, job.kind, job.subject, Data(job.payload), job.dueAtMilliseconds
            ).count == 1
        if added { wakeAfterCommit(tx) }
        return added
    }

    /// Moves a scheduled job to `dueAtMilliseconds` (its failed attempts forgotten); false when there is
    /// no such job.
    @discardableResult
    public func move(id: String, to dueAtMilliseconds: Int64, in tx: PostgresTransaction) async throws -> Bool {
        let moved =
            try await tx.query(
                """
                UPDATE runtime_scheduled_job SET due_at_ms = \(dueAtMilliseconds), attempts = 0, last_error = NULL
                WHERE id = \(id) RETURNING id
                """
            ).count == 1
        if moved { wakeAfterCommit(tx) }
        return moved
    }

    /// Cancels one job; false when there was none.
    @discardableResult
    public func cancel(id: String, in tx: PostgresTransaction) async throws -> Bool {
        try await tx.query("DELETE FROM runtime_scheduled_job WHERE id = \(id) RETURNING id").count == 1
    }

    /// Cancels every job about `subject` (of `kind`, or of every kind). Returns how many went.
    @discardableResult
    public func cancel(subject: String, kind: String? = nil, in tx: PostgresTransaction) async throws -> Int {
        if let kind {
            return try await tx.query(
                "DELETE FROM runtime_scheduled_job WHERE subject = \(subject) AND kind = \(kind) RETURNING id"
            ).count
        }
        return try await tx.query("DELETE FROM runtime_scheduled_job WHERE subject = \(subject) RETURNING id").count
    }

    /// The scheduled jobs about `subject`, soonest first.
    public func jobs(subject: String, in tx: PostgresTransaction) async throws -> [ScheduledJob] {
        try await tx.query(
            """
            SELECT id, kind, subject, payload, due_at_ms, attempts FROM runtime_scheduled_job
            WHERE subject = \(subject) ORDER BY due_at_ms, id
            """
        ).map(Self.job)
    }

    /// A `runtime_scheduled_job` row selected as `id, kind, subject, payload, due_at_ms, attempts`.
    static func job(_ row: PostgresRow) throws -> ScheduledJob {
        let (id, kind, subject, payload, due, attempts) = try row.decode(
            (String, String, String?, ByteBuffer, Int64, Int).self)
        return ScheduledJob(
            id: id, kind: kind, subject: subject, payload: Array(payload.readableBytesView), dueAtMilliseconds: due,
            attempts: attempts)
    }

    private func wakeAfterCommit(_ tx: PostgresTransaction) {
        let wakeUp = self.wakeUp
        tx.afterCommit { wakeUp.signal() }
    }
}

/// A job's row: every reservation schedules its reminder in its own transaction.
private enum ScheduleJob: HotStatement {
    static let parameters: [PostgresDataType] = [.text, .text, .text, .bytea, .int8]
    static let sql = """
        INSERT INTO runtime_scheduled_job (id, kind, subject, payload, due_at_ms, attempts)
        VALUES ($1, $2, $3, $4, $5, 0)
        ON CONFLICT (id) DO NOTHING RETURNING id
        """
}
