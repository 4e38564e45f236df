import ServiceRuntime

/// The AccountService process's stores on the engine in use (docs/postgres.md): SQLite's by default,
/// PostgreSQL's when `--database` names one. Each is a cheap value over the process's one database (or
/// pool), so every host (accounts, identities, inbox, moderation, SLP, Housetainer, Zipadoo) builds its
/// own and they all see the same rows.
extension AccountServiceDefinition {
    /// The accounts: users, designers, sessions, follows, search, identities and deletion.
    static func accountStore(_ env: ServiceEnvironment) -> any AccountStore {
        switch env.engine {
        case .sqlite: sqliteAccountStore(env)
        case .postgres: postgresAccountStore(env)
        }
    }

    /// The SQLite account store; the Housetainer and Zipadoo stores create accounts through it.
    static func sqliteAccountStore(_ env: ServiceEnvironment) -> SQLiteAccountStore {
        SQLiteAccountStore(
            database: env.database, events: AccountEvents(outbox: env.outbox), revokedUsers: env.revokedUsers)
    }

    /// The PostgreSQL account store; the Housetainer and Zipadoo stores create accounts through it.
    static func postgresAccountStore(_ env: ServiceEnvironment) -> PostgresAccountStore {
        guard case .postgres(let postgres) = env.engine else {
            preconditionFailure("postgresAccountStore on SQLite")
        }
        return PostgresAccountStore(
            postgres: postgres, events: PostgresAccountEvents(outbox: env.outbox), revokedUsers: env.revokedUsers)
    }

    /// Writes inbox rows and queues pushes inside a store's transaction, with the process's outbox,
    /// ids, clock and the `notifications.kept` quota.
    static func notifier(_ env: ServiceEnvironment) -> Notifier {
        Notifier(
            outbox: env.outbox, ids: env.ids, clock: env.clock,
            kept: Int(env.configuration.quotas.notificationsKept.limit))
    }

    /// Devices and inboxes.
    static func notificationStore(_ env: ServiceEnvironment) -> any NotificationStore {
        switch env.engine {
        case .sqlite(let database): SQLiteNotificationStore(database: database, notifier: notifier(env))
        case .postgres(let postgres):
            PostgresNotificationStore(postgres: postgres, notifier: PostgresNotifier(notifier(env)))
        }
    }

    /// Reports, inquiries and suspensions.
    static func moderationStore(_ env: ServiceEnvironment) -> any ModerationStore {
        switch env.engine {
        case .sqlite(let database):
            SQLiteModerationStore(
                database: database, revokedUsers: env.revokedUsers, events: AccountEvents(outbox: env.outbox))
        case .postgres(let postgres):
            PostgresModerationStore(
                postgres: postgres, revokedUsers: env.revokedUsers, events: PostgresAccountEvents(outbox: env.outbox))
        }
    }

    /// SLP's profiles, queue, matches and ratings.
    static func slpStore(_ env: ServiceEnvironment) -> any SlpStore {
        switch env.engine {
        case .sqlite(let database):
            SQLiteSlpStore(database: database, notifier: notifier(env), events: AccountEvents(outbox: env.outbox))
        case .postgres(let postgres):
            PostgresSlpStore(
                postgres: postgres, notifier: PostgresNotifier(notifier(env)),
                events: PostgresAccountEvents(outbox: env.outbox))
        }
    }

    /// Housetainer's members, invitations and their codes.
    static func housetainerStore(_ env: ServiceEnvironment) -> any HousetainerMemberStore {
        switch env.engine {
        case .sqlite(let database):
            SQLiteHousetainerMemberStore(
                database: database, accounts: sqliteAccountStore(env), events: AccountEvents(outbox: env.outbox))
        case .postgres:
            PostgresHousetainerMemberStore(
                accounts: postgresAccountStore(env), events: PostgresAccountEvents(outbox: env.outbox))
        }
    }

    /// Zipadoo's friends.
    static func zipadooStore(_ env: ServiceEnvironment) -> any ZipadooFriendStore {
        switch env.engine {
        case .sqlite: SQLiteZipadooFriendStore(accounts: sqliteAccountStore(env))
        case .postgres: PostgresZipadooFriendStore(accounts: postgresAccountStore(env))
        }
    }
}
