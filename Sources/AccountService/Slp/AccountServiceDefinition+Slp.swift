import ServiceRuntime

/// How the AccountService process hosts SLP's matching (docs/slp.md): beside the accounts it pairs.
extension AccountServiceDefinition {
    /// `yedi.slp.Matching` beside `account` (its kit, tickets and sessions): its store notifies through
    /// the process's inbox and outbox, and reports go to the platform's moderation store. When the
    /// process serves SLP, queue entries older than the app's `retention_days.queue_position` are pruned at start and hourly.
    static func slp(_ env: ServiceEnvironment, account: AccountHandlers) -> SlpHandlers {
        let store = slpStore(env)
        if let days = env.apps[SQLiteSlpStore.app]?.retentionDays["queue_position"] {
            let clock = env.clock
            let retention = Int64(days) * 86_400_000
            env.addBackgroundService(
                PeriodicJob(name: "slp-queue-pruning", period: pruningPeriod, logger: env.logger) {
                    try await store.pruneQueue(enteredBefore: clock.nowMilliseconds - retention)
                })
        }
        return SlpHandlers(
            store: store,
            moderation: moderationStore(env),
            account: account)
    }
}
