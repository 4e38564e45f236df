/// Where `OutboxWorker` finds its jobs and records what became of them: SQLite's `runtime_outbox`, read
/// whole by the one process that writes it (`SQLiteOutboxQueue`), or PostgreSQL's, shared by replicas
/// that claim jobs with leases (`PostgresOutboxQueue`). Delivering (each peer's jobs in order, the peers
/// in parallel, the backoff per peer, outside senders) is the worker's, the same on both engines.
protocol OutboxQueue: Sendable {
    /// The jobs to deliver now, oldest first, leaving out those of `waitingPeers` (in this worker's
    /// backoff after a failure).
    func takeDueJobs(skippingPeers waitingPeers: Set<String>) async throws -> OutboxBatch

    /// Asked right before `job` is delivered: whether it is still this worker's to deliver. An outside
    /// message may have been dropped since it was taken (`Outbox.dropOutsideMessages`); on PostgreSQL the
    /// job must still be leased to this replica, and the lease is renewed for the delivery.
    func isStillToDeliver(_ job: OutboxJob) async throws -> Bool

    /// The job was accepted, or refused for good: it goes.
    func delete(_ job: OutboxJob) async throws

    /// Failed attempt number `attempts`: counted, its error kept, tried again after `delay`.
    func recordFailure(_ job: OutboxJob, attempts: Int, error: String, retryIn delay: Duration) async throws

    /// Tried again after `delay`, nothing recorded (the job was refused for good, but deleting it failed).
    func retry(_ job: OutboxJob, in delay: Duration) async

    /// Jobs taken but not attempted (their peer's round stopped at a failure, or the worker is stopping),
    /// handed back, due no sooner than after `delay`.
    func giveBack(_ jobs: [OutboxJob], notBefore delay: Duration) async

    /// When the soonest job in this queue's own backoff is due (SQLite keeps it in memory); nil when the
    /// rows keep it and the worker looks again at its poll (PostgreSQL).
    func nextRetry() -> ContinuousClock.Instant?
}
