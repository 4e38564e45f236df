import Foundation
import GRDB

/// The scheduler's jobs in the service's SQLite database; every statement goes through its one writer.
struct SQLiteScheduledJobQueue: ScheduledJobQueue {
    let database: ServiceDatabase

    func runNextDueJob(now: Int64, scheduler: Scheduler) async throws -> ScheduledJob? {
        try await database.write { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        DELETE FROM runtime_scheduled_job WHERE id = (
                          SELECT id FROM runtime_scheduled_job WHERE due_at_ms <= ? ORDER BY due_at_ms, id LIMIT 1
                        ) RETURNING *
                        """,
                    arguments: [now])
            else { return nil }
            let job = Scheduler.job(row)
            guard let handler = scheduler.handler(for: job.kind) else {
                throw ScheduledJobFailure(job: job, error: "no handler for kind \(job.kind)")
            }
            do {
                try handler(job, db)
            } catch {
                throw ScheduledJobFailure(job: job, error: "\(error)")
            }
            return job
        }
    }

    func recordFailure(_ job: ScheduledJob, attempts: Int, error: String, dueAtMilliseconds: Int64) async throws {
        try await database.write { db in
            try db.execute(
                sql: "UPDATE runtime_scheduled_job SET attempts = ?, last_error = ?, due_at_ms = ? WHERE id = ?",
                arguments: [attempts, error, dueAtMilliseconds, job.id])
        }
    }

    func nextDueTime() async throws -> Int64? {
        try await database.read { db in
            try Int64.fetchOne(db, sql: "SELECT MIN(due_at_ms) FROM runtime_scheduled_job")
        }
    }
}
