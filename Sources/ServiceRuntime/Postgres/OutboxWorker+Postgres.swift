import Logging

extension OutboxWorker {
    /// The worker of one replica of a service on PostgreSQL: it claims due jobs with leases named
    /// `replica` (`--replica`, unique among the service's replicas), so that each job is delivered by one
    /// replica at a time, and looks for jobs other replicas enqueued every `replicaPollInterval` (its own
    /// process wakes it after each commit). The lease is `deliveryTimeout + leaseMargin`, taken again
    /// right before each delivery (`PostgresOutboxQueue`).
    public convenience init(
        postgres: ServicePostgres,
        outbox: Outbox,
        peers: ServicePeers,
        logger: Logger,
        settings: Settings,
        replica: String
    ) {
        self.init(
            queue: PostgresOutboxQueue(
                postgres: postgres, replica: replica, lease: settings.deliveryTimeout + settings.leaseMargin,
                claimSize: settings.claimSize),
            outbox: outbox, peers: peers, logger: logger, settings: settings,
            pollInterval: settings.replicaPollInterval)
    }
}
