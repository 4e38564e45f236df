import ServiceRuntime

/// How the AccountService process hosts SLP's matching (docs/slp.md): beside the accounts it pairs.
extension AccountServiceDefinition {
    /// `yedi.slp.Matching` on `kit` (the process's one kit): its store notifies through the process's
    /// inbox and outbox, and reports go to the platform's moderation store.
    static func slp(_ env: ServiceEnvironment, kit: HandlerKit) -> SlpHandlers {
        SlpHandlers(
            store: SQLiteSlpStore(
                database: env.database,
                notifier: Notifier(
                    outbox: env.outbox, ids: env.ids, clock: env.clock,
                    kept: Int(env.configuration.quotas.notificationsKept.limit)),
                events: AccountEvents(outbox: env.outbox)),
            moderation: SQLiteModerationStore(
                database: env.database, revokedUsers: env.revokedUsers, events: AccountEvents(outbox: env.outbox)),
            kit: kit)
    }
}
