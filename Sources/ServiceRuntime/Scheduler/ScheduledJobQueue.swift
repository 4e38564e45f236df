/// Where a `SchedulerWorker` finds its jobs: the service's SQLite database (`SQLiteScheduledJobQueue`) or
/// its PostgreSQL one shared by replicas (`PostgresScheduledJobQueue`). Either way a job runs in the
/// transaction that deletes it, so its effects and its end commit together.
protocol ScheduledJobQueue: Sendable {
    /// Claims the soonest job due at `now` and runs its kind's handler in the transaction that deletes
    /// it; nil when nothing is due. A failed run throws `ScheduledJobFailure`, everything rolled back.
    func runNextDueJob(now: Int64, scheduler: Scheduler) async throws -> ScheduledJob?
    /// A failed run's attempts and error, and when it is due again.
    func recordFailure(_ job: ScheduledJob, attempts: Int, error: String, dueAtMilliseconds: Int64) async throws
    /// When the soonest job is due (wall-clock milliseconds), if there is one.
    func nextDueTime() async throws -> Int64?
}

/// A job whose run failed: its handler threw, or no handler knows its kind.
struct ScheduledJobFailure: Error {
    var job: ScheduledJob
    var error: String
}
