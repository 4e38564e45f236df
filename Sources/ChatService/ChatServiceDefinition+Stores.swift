import Logging
import RPCCore
import ServiceRuntime

/// The ChatService process's store on the engine in use (docs/postgres.md): SQLite's by default, whose one
/// writer hands each commit's events to the hub in position order; PostgreSQL's when `--database` names
/// one, where several replicas write and the hub carries wake-ups from the `chat_events` notifications.
extension ChatServiceDefinition {
    /// ChatService's versions on PostgreSQL: the runtime's, then chat's, in SQLite's order.
    static let postgresMigrations: [PostgresMigration]? =
        RuntimePostgresSchema.migrations + ChatPostgresSchema.migrations

    /// The store, its commits told to `hub`; on PostgreSQL also the listener that wakes this replica's
    /// streams for commits made anywhere, and ends a purged user's streams on every replica.
    static func store(_ env: ServiceEnvironment, hub: ChatEventHub) -> any ChatStore {
        let pushes = OfflinePushes(outbox: env.outbox)
        switch env.engine {
        case .sqlite(let database):
            return SQLiteChatStore(database: database, sink: { hub.publish($0) }, pushes: pushes)
        case .postgres(let postgres):
            env.addBackgroundService(notificationListener(postgres, hub: hub, logger: env.logger))
            return PostgresChatStore(postgres: postgres, sink: { hub.publish($0) }, pushes: pushes)
        }
    }

    /// The listener that wakes this replica's streams for commits made on any replica, and ends a purged
    /// user's streams everywhere.
    static func notificationListener(_ postgres: ServicePostgres, hub: ChatEventHub, logger: Logger)
        -> PostgresNotificationListener
    {
        hub.postgresListener(
            postgres, channel: PostgresChatStore.channel, logger: logger,
            wakeUp: { ChatEventRecord.wakeUp($0, position: $1) },
            ended: RPCError(code: .unauthenticated, message: "this account was deleted"))
    }
}
