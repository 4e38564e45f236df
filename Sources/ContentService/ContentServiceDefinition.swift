import CountLimitedCache
import GRDB
import RPCCore
import ServiceRuntime
import YediProto

/// ContentService: images, posts and their feeds, likes, reviews with their designer summaries.
enum ContentServiceDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(
        name: "content", port: 7002, metricsPort: 9102,
        // Images of up to 10 MiB, plus the envelope and the rest of the request.
        maxFrameBytes: 11 << 20, peers: ["account", "booking"])
    static let summary = "Yedi ContentService: images, posts, feeds, likes and reviews, over TLS."

    static func migrate(_ migrator: inout DatabaseMigrator) {
        ContentSchema.migrate(&migrator)
    }

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        services(try await handlers(env))
    }

    /// Every service the process hosts: the content, and its operators' moderation on the same store.
    static func services(_ content: ContentHandlers) -> [any RPCService] {
        [content, ContentModerationHandlers(store: content.store, kit: content.kit)]
    }

    /// The handlers on `env`. Tests pass their own blob store (to count reads) or peers (to count calls).
    static func handlers(
        _ env: ServiceEnvironment,
        blobs: (any ImageBlobStore)? = nil,
        peers: ContentPeers? = nil
    ) async throws -> ContentHandlers {
        let store = SQLiteContentStore(database: env.database, outbox: env.outbox)
        let images = ImageLibrary(
            store: store,
            blobs: try blobs ?? FileImageBlobStore(folder: try env.dataFolder("images")),
            cache: LRUCache(
                name: "content-images", capacity: env.configuration.imageCacheItems, metricsFactory: env.metrics))
        // A purge that died between its commit and its file deletions left them listed: finish them.
        let collected = try await images.collectGarbage()
        if collected > 0 {
            env.logger.info("deleted image files left by an interrupted purge", metadata: ["files": "\(collected)"])
        }
        let peers = peers ?? ContentPeers.live(env.peers)
        let collector = imageCollector(env, images: images, peers: peers)
        env.addBackgroundService(
            PeriodicJob(
                name: "unreferenced-images", period: collectionPeriod, logger: env.logger, work: collector.collect))
        return ContentHandlers(
            store: store,
            images: images,
            peers: peers,
            kit: env.makeHandlerKit(directoryLookup: peers.users))
    }

    /// How often unreferenced images past their grace are looked for (and once at start).
    static let collectionPeriod: Duration = .seconds(3_600)

    static func imageCollector(_ env: ServiceEnvironment, images: ImageLibrary, peers: ContentPeers)
        -> UnreferencedImageCollector
    {
        UnreferencedImageCollector(
            store: images.store, images: images, users: peers.users, clock: env.clock,
            grace: env.configuration.retention.unreferencedImages)
    }
}
