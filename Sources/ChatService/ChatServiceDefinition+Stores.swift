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

    /// `chat_events` payloads: `recipient:position` wakes the recipient's streams here;
    /// `user:end` ends a purged user's (the purge ran on some replica).
    static func notificationListener(_ postgres: ServicePostgres, hub: ChatEventHub, logger: Logger)
        -> PostgresNotificationListener
    {
        PostgresNotificationListener(
            postgres: postgres, channel: PostgresChatStore.channel, logger: logger,
            received: { payload in
                guard let colon = payload.lastIndex(of: ":") else { return }
                let recipient = String(payload[..<colon])
                let tail = payload[payload.index(after: colon)...]
                if tail == PostgresChatStore.endOfStreams {
                    hub.end(key: recipient, RPCError(code: .unauthenticated, message: "this account was deleted"))
                } else if let position = Int64(tail) {
                    hub.publish([.wakeUp(recipient, position: position)])
                }
            },
            listening: {
                hub.resume()
                // Notifications sent while nobody listened are gone: every stream re-reads.
                hub.publishToEveryKey { .wakeUp($0, position: .max) }
            },
            lost: {
                hub.suspend(
                    RPCError(
                        code: .unavailable,
                        message:
                            "live events cannot be promised on this replica now; subscribe again elsewhere with after_position = your last position"
                    ))
            })
    }
}
