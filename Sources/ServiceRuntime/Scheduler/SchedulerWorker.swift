import Foundation
import GRDB
import Logging
import ServiceLifecycle

/// Runs the scheduler's due jobs, soonest first, each in the write transaction that deletes it, then
/// sleeps until the next one is due, a job is scheduled or moved, or the clock is moved.
///
/// A failed run (the handler threw, or no handler knows the kind) is rolled back with its effects and
/// tried again after `retryDelay(afterAttempts:)`, with the attempt and error recorded on the row.
public final class SchedulerWorker: Service, Sendable {
    private let database: ServiceDatabase
    private let scheduler: Scheduler
    private let logger: Logger
    /// A safety net for jobs another process wrote into the same database (replicas): this process's
    /// own scheduling, and clock moves, wake it at once.
    let pollInterval: Duration

    public init(
        database: ServiceDatabase, scheduler: Scheduler, logger: Logger, pollInterval: Duration = .seconds(60)
    ) {
        self.database = database
        self.scheduler = scheduler
        self.logger = logger
        self.pollInterval = pollInterval
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let next = await self.runDueJobs()
                let wait = next.map { Duration.milliseconds(max(0, $0 - self.scheduler.clock.nowMilliseconds)) }
                await self.scheduler.wakeUp.wait(timeout: min(wait ?? self.pollInterval, self.pollInterval))
            }
        }
    }

    /// Runs every job due now; returns when the next one is due (wall-clock milliseconds), if any.
    func runDueJobs() async -> Int64? {
        while !Task.isCancelled {
            do {
                guard try await runNextDueJob() else { break }
            } catch let failure as JobFailure {
                await record(failure)
            } catch {
                if !Task.isCancelled { logger.error("scheduler: cannot run jobs", metadata: ["error": "\(error)"]) }
                return scheduler.clock.nowMilliseconds + Int64(pollInterval.components.seconds) * 1_000
            }
        }
        return try? await database.read { db in
            try Int64.fetchOne(db, sql: "SELECT MIN(due_at_ms) FROM runtime_scheduled_job")
        }
    }

    /// Claims the soonest due job in one statement and runs it in the same transaction; false when
    /// nothing is due.
    private func runNextDueJob() async throws -> Bool {
        let scheduler = self.scheduler
        let now = scheduler.clock.nowMilliseconds
        let ran: ScheduledJob? = try await database.write { db in
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
                throw JobFailure(job: job, error: "no handler for kind \(job.kind)")
            }
            do {
                try handler(job, db)
            } catch {
                throw JobFailure(job: job, error: "\(error)")
            }
            return job
        }
        guard let ran else { return false }
        logger.debug("scheduler: ran", metadata: ["job": "\(ran.id)", "kind": "\(ran.kind)"])
        return true
    }

    private struct JobFailure: Error {
        var job: ScheduledJob
        var error: String
    }

    /// Due again after the backoff, on the wall clock (rolled back, the row is as it was before the run).
    private func record(_ failure: JobFailure) async {
        let attempts = failure.job.attempts + 1
        let delay = Self.retryDelay(afterAttempts: attempts)
        logger.warning(
            "scheduler: job failed; will retry",
            metadata: [
                "job": "\(failure.job.id)", "kind": "\(failure.job.kind)", "attempt": "\(attempts)",
                "retry-in-ms": "\(delay)", "error": "\(failure.error)",
            ])
        let due = scheduler.clock.nowMilliseconds + delay
        do {
            try await database.write { db in
                try db.execute(
                    sql: "UPDATE runtime_scheduled_job SET attempts = ?, last_error = ?, due_at_ms = ? WHERE id = ?",
                    arguments: [attempts, String(failure.error.prefix(500)), due, failure.job.id])
            }
        } catch {
            logger.error("scheduler: cannot record a failed job", metadata: ["error": "\(error)"])
        }
    }

    /// 1 s, doubling per failed attempt, at most an hour (milliseconds).
    static func retryDelay(afterAttempts attempts: Int) -> Int64 {
        min(3_600_000, Int64(1_000) << Int64(min(max(attempts - 1, 0), 12)))
    }
}
