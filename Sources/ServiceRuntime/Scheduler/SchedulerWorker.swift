import Foundation
import Logging
import ServiceLifecycle

/// Runs the scheduler's due jobs, soonest first, each in the write transaction that deletes it, then
/// sleeps until the next one is due, a job is scheduled or moved, or the clock is moved.
///
/// A failed run (the handler threw, or no handler knows the kind) is rolled back with its effects and
/// tried again after `retryDelay(afterAttempts:)`, with the attempt and error recorded on the row.
public final class SchedulerWorker: Service, Sendable {
    private let queue: any ScheduledJobQueue
    private let scheduler: Scheduler
    private let logger: Logger
    /// A safety net for jobs another process wrote into the same database (replicas): this process's
    /// own scheduling, and clock moves, wake it at once.
    let pollInterval: Duration

    /// The worker of a service on SQLite.
    public convenience init(
        database: ServiceDatabase, scheduler: Scheduler, logger: Logger, pollInterval: Duration = .seconds(60)
    ) {
        self.init(
            queue: SQLiteScheduledJobQueue(database: database), scheduler: scheduler, logger: logger,
            pollInterval: pollInterval)
    }

    init(queue: any ScheduledJobQueue, scheduler: Scheduler, logger: Logger, pollInterval: Duration) {
        self.queue = queue
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
                guard
                    let ran = try await queue.runNextDueJob(now: scheduler.clock.nowMilliseconds, scheduler: scheduler)
                else { break }
                logger.debug("scheduler: ran", metadata: ["job": "\(ran.id)", "kind": "\(ran.kind)"])
            } catch let failure as ScheduledJobFailure {
                await record(failure)
            } catch {
                if !Task.isCancelled { logger.error("scheduler: cannot run jobs", metadata: ["error": "\(error)"]) }
                return scheduler.clock.nowMilliseconds + Int64(pollInterval.components.seconds) * 1_000
            }
        }
        return try? await queue.nextDueTime()
    }

    /// Due again after the backoff, on the wall clock (rolled back, the row is as it was before the run).
    private func record(_ failure: ScheduledJobFailure) async {
        let attempts = failure.job.attempts + 1
        let delay = Self.retryDelay(afterAttempts: attempts)
        logger.warning(
            "scheduler: job failed; will retry",
            metadata: [
                "job": "\(failure.job.id)", "kind": "\(failure.job.kind)", "attempt": "\(attempts)",
                "retry-in-ms": "\(delay)", "error": "\(failure.error)",
            ])
        do {
            try await queue.recordFailure(
                failure.job, attempts: attempts, error: String(failure.error.prefix(500)),
                dueAtMilliseconds: scheduler.clock.nowMilliseconds + delay)
        } catch {
            logger.error("scheduler: cannot record a failed job", metadata: ["error": "\(error)"])
        }
    }

    /// 1 s, doubling per failed attempt, at most an hour (milliseconds).
    static func retryDelay(afterAttempts attempts: Int) -> Int64 {
        min(3_600_000, Int64(1_000) << Int64(min(max(attempts - 1, 0), 12)))
    }
}
