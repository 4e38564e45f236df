import PostgresNIO

/// The scheduler's jobs in the service's PostgreSQL database, shared by its replicas' workers.
///
/// A worker claims the soonest due job with `FOR UPDATE SKIP LOCKED` inside the transaction that
/// deletes it and runs its handler: the row stays locked until that transaction ends, so another
/// replica's worker passes over it and takes the next one, and a job runs once. A replica that dies
/// mid-run loses its connection, the server rolls the transaction back, and the job is due again at
/// once. Due times are on the injected clock, as on SQLite (the lock, not a lease, keeps two replicas
/// apart; so a development clock moved on one replica only makes that replica run jobs early).
struct PostgresScheduledJobQueue: ScheduledJobQueue {
    let postgres: ServicePostgres

    func runNextDueJob(now: Int64, scheduler: Scheduler) async throws -> ScheduledJob? {
        try await postgres.write { tx in
            guard
                let row = try await tx.query(
                    """
                    DELETE FROM runtime_scheduled_job WHERE id = (
                        SELECT id FROM runtime_scheduled_job WHERE due_at_ms <= \(now)
                        ORDER BY due_at_ms, id LIMIT 1 FOR UPDATE SKIP LOCKED)
                    RETURNING id, kind, subject, payload, due_at_ms, attempts
                    """
                ).first
            else { return nil }
            let job = try Scheduler.job(row)
            guard let handler = scheduler.postgresHandler(for: job.kind) else {
                throw ScheduledJobFailure(job: job, error: "no handler for kind \(job.kind)")
            }
            do {
                try await handler(job, tx)
            } catch let error where PostgresFailure.isRetryable(error) || PostgresFailure.isUnavailable(error) {
                throw error  // the database's trouble, not the job's: re-run, or tried again at the next look
            } catch {
                throw ScheduledJobFailure(job: job, error: "\(error)")
            }
            return job
        }
    }

    func recordFailure(_ job: ScheduledJob, attempts: Int, error: String, dueAtMilliseconds: Int64) async throws {
        let logger = postgres.logger
        try await postgres.read { connection in
            try await connection.query(
                """
                UPDATE runtime_scheduled_job SET attempts = \(attempts), last_error = \(error),
                    due_at_ms = \(dueAtMilliseconds)
                WHERE id = \(job.id)
                """, logger: logger)
        }
    }

    func nextDueTime() async throws -> Int64? {
        let logger = postgres.logger
        return try await postgres.read { connection in
            try await connection.query("SELECT min(due_at_ms) FROM runtime_scheduled_job", logger: logger)
                .collect().first?.decode(Int64?.self)
        }
    }
}
