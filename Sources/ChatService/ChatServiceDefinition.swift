import GRDB
import RPCCore
import ServiceRuntime
import YediProto

/// ChatService: rooms between a customer and a designer, messages with per-room sequence numbers, read
/// cursors and unread counts, and one resumable live stream per user (docs/chat.md).
enum ChatServiceDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(
        name: "chat", port: 7004, metricsPort: 9104, peers: ["account", "content", "booking"])
    static let summary = "Yedi ChatService: customer–designer rooms, messages and live streams, over TLS."

    static func migrate(_ migrator: inout DatabaseMigrator) {
        ChatSchema.migrate(&migrator)
    }

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        [handlers(env, hub: ChatEventHub())]
    }

    /// The handlers on `env` with `hub` (tests pass a small buffer); registers the hub's shutdown.
    static func handlers(_ env: ServiceEnvironment, hub: ChatEventHub, peers: ChatPeers? = nil) -> ChatHandlers {
        env.addDrainingService(StreamHubShutdown(hub: hub))
        // A deleted user's live streams end when the revocation arrives (before the purge, which waits
        // for it): a stream would otherwise keep delivering to a revoked user.
        env.onUserRevoked { userID in
            hub.end(key: userID, RPCError(code: .unauthenticated, message: "this account was deleted"))
        }
        let peers = peers ?? ChatPeers.live(env.peers)
        let store = Self.store(env, hub: hub)
        env.addBackgroundService(eventPruning(env, store: store))
        let postgres: ServicePostgres? = if case .postgres(let postgres) = env.engine { postgres } else { nil }
        let onPostgres = postgres != nil
        var presence: any StreamPresence = hub
        if let postgres {
            let listed = PostgresStreamPresence(
                postgres: postgres, replica: env.configuration.replica, hub: hub, logger: env.logger)
            env.addBackgroundService(listed)
            presence = listed
        }
        return ChatHandlers(
            store: store,
            peers: peers,
            cache: HistoryCache(enabled: !onPostgres),
            hub: hub,
            presence: presence,
            photos: PhotoURLRefresher(
                capacity: env.configuration.textCacheItems, clock: env.clock, lookup: peers.images),
            kit: env.makeHandlerKit(),
            liveFromLog: onPostgres,
            streamReads: postgres?.streamReads)
    }

    /// How often stream events past their retention are pruned (and once at start).
    static let pruningPeriod: Duration = .seconds(3_600)

    /// Deletes stream events older than `--retention chat.events` (7 days by default).
    static func eventPruning(_ env: ServiceEnvironment, store: any ChatStore) -> PeriodicJob {
        let clock = env.clock
        let retention = env.configuration.retention.chatEvents
        return PeriodicJob(name: "chat-event-pruning", period: pruningPeriod, logger: env.logger) {
            try await store.pruneEvents(createdBefore: clock.nowMilliseconds - retention)
        }
    }
}
