import CountLimitedCache
import GRDB
import RPCCore
import RPCTLS
import ServiceRuntime
import SmallHTTPServer
import YediProto

/// ContentService: images, posts and their feeds, likes, reviews with their designer summaries.
enum ContentServiceDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(
        name: "content", port: 7002, metricsPort: 9102,
        // Images of up to 10 MiB, plus the envelope and the rest of the request.
        maxFrameBytes: 11 << 20, peers: ["account", "booking"], imagePort: 8002)
    static let summary = "Yedi ContentService: images, posts, feeds, likes and reviews, over TLS."

    static func migrate(_ migrator: inout DatabaseMigrator) {
        ContentSchema.migrate(&migrator)
        CommunitySchema.migrate(&migrator)
    }

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        services(try await handlers(env), env: env)
    }

    /// Every service the process hosts: the content, its operators' moderation on the same store, and
    /// Housetainer's community beside the images it shows.
    static func services(_ content: ContentHandlers, env: ServiceEnvironment) -> [any RPCService] {
        [
            content, ContentModerationHandlers(store: content.store, kit: content.kit),
            community(env, content: content),
        ]
    }

    /// The handlers on `env`. Tests pass their own blob store (to count reads) or peers (to count calls).
    static func handlers(
        _ env: ServiceEnvironment,
        blobs: (any ImageBlobStore)? = nil,
        peers: ContentPeers? = nil
    ) async throws -> ContentHandlers {
        let store = contentStore(env)
        let stores = try blobStores(env)
        let variants = ServedVariants(
            blobs: stores.variants, store: store,
            cache: LRUCache(
                name: "content-image-variants", capacity: env.configuration.imageCacheItems,
                metricsFactory: env.metrics),
            revalidatesHits: cachesRevalidate(env))
        let images = ImageLibrary(
            store: store,
            blobs: blobs ?? stores.originals,
            cache: LRUCache(
                name: "content-images", capacity: env.configuration.imageCacheItems, metricsFactory: env.metrics),
            variants: variants, revalidatesHits: cachesRevalidate(env))
        let urls = try imageServer(env, variants: variants)
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
            urls: urls,
            peers: peers,
            kit: env.makeHandlerKit(directoryLookup: peers.users))
    }

    /// The HTTPS image port (`ImageResponder`), run with the service's other background work, and the URLs
    /// replies carry. TLS as on the RPC port (the service's certificate, RPCTLS's handler; no client
    /// certificates: apps load images); no request bodies, at most 1,024 connections.
    static func imageServer(_ env: ServiceEnvironment, variants: ServedVariants) throws -> ImageURLs {
        let configuration = env.configuration
        let settings = configuration.images ?? ImageServerSettings(port: 0)
        let what = "image URL key"
        let key =
            try settings.keyFile.map {
                try KeyFile.load($0, what: what, option: "--image-url-key or YEDI_IMAGE_URL_KEY")
            }
            ?? KeyFile.loadOrCreate(env.dataDirectory.appendingPathComponent("image-url.key").path, what: what)
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        let base = settings.urlBase ?? (settings.port == 0 ? "" : "https://\(host):\(settings.port)")
        let urls = ImageURLs(
            base: base, signer: ImageURLSigner(key: key), lifetime: settings.signedURLLifetime, clock: env.clock)
        let tls = try TLSContext(
            configuration: TLSConfiguration(
                role: .server, certificateChainFile: configuration.certificateFile,
                privateKeyFile: configuration.privateKeyFile, applicationProtocols: ["http/1.1"]))
        let server = HTTPServer(
            name: "image server",
            configuration: HTTPServerConfiguration(
                host: configuration.host, port: settings.port, maxRequestBodyBytes: 0, maxConnections: 1_024),
            tls: tls,
            responder: ImageResponder(variants: variants, signer: urls.signer, clock: env.clock, logger: env.logger),
            logger: env.logger)
        env.addBackgroundService(server)
        if base.isEmpty {
            // Port 0 (tests): the URLs name the port once the system has picked it.
            Task { if let port = try? await server.port { urls.setBase("https://\(host):\(port)") } }
        }
        return urls
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
