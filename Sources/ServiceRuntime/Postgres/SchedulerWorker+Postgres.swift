import Logging

extension SchedulerWorker {
    /// The worker of one replica of a service on PostgreSQL. Each replica runs one; a job runs once
    /// among them (`PostgresScheduledJobQueue`). `pollInterval` bounds how long a job that another
    /// replica scheduled (and then died before running) waits to be seen.
    public convenience init(
        postgres: ServicePostgres, scheduler: Scheduler, logger: Logger, pollInterval: Duration = .seconds(60)
    ) {
        self.init(
            queue: PostgresScheduledJobQueue(postgres: postgres), scheduler: scheduler, logger: logger,
            pollInterval: pollInterval)
    }
}
