import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
import ServiceLifecycle
import Synchronization

/// A small HTTP/1.1 server for operations: `GET /metrics` renders a Prometheus registry in text exposition
/// format, and `GET /healthz` answers `200 ok` or `503 unavailable` from a health closure. Everything else is
/// 404 (or 405 for methods other than `GET` and `HEAD`).
///
/// It is a `Service`: put it in the process's `ServiceGroup`. ``run()`` binds, serves until graceful shutdown or
/// cancellation, then closes the listener. On graceful shutdown, connections finish the request they are in and
/// close; on cancellation they are closed at once (ServiceGroup cancels a service that overruns its graceful
/// shutdown timeout, which also cuts off a client stalling mid-request).
public final class ObservabilityServer: Service {
    public let configuration: Configuration
    private let router: ObservabilityRouter
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let listeningAddressLatch = ListeningAddressLatch()
    private let hasRun = Atomic<Bool>(false)

    /// - Parameters:
    ///   - registry: What `/metrics` renders, e.g. the one from ``YediMetrics/bootstrapPrometheus()``.
    ///   - eventLoopGroup: Where connections are served; NIO's shared group unless the caller has its own.
    ///   - isServing: Whether `/healthz` says 200 rather than 503. It runs on an event loop for each request,
    ///     so it must be quick and must not block.
    public init(
        configuration: Configuration,
        registry: PrometheusCollectorRegistry,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger,
        isServing: @escaping @Sendable () -> Bool
    ) {
        self.configuration = configuration
        self.router = ObservabilityRouter(registry: registry, isServing: isServing)
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
    }

    /// The address the server listens on, once ``run()`` has bound it (callers wait until then); the way to learn
    /// the port the system picked for port 0. Throws the bind error if binding failed.
    public var listeningAddress: SocketAddress {
        get async throws { try await listeningAddressLatch.wait() }
    }

    /// The port of ``listeningAddress``.
    public var port: Int {
        get async throws {
            let address = try await listeningAddress
            guard let port = address.port else {
                preconditionFailure("an inet listener has a port; got \(address)")
            }
            return port
        }
    }

    /// Serves until graceful shutdown or cancellation, then closes the listener and every connection.
    /// Callable once per server.
    public func run() async throws {
        precondition(
            hasRun.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged,
            "ObservabilityServer.run() may be called only once"
        )
        let connections = ObservabilityConnections()
        let listener: any Channel
        do {
            listener = try await makeBootstrap(connections: connections)
                .bind(host: configuration.host, port: configuration.port)
                .get()
        } catch {
            logger.error("observability server failed to bind", metadata: ["error": "\(error)"])
            listeningAddressLatch.resolve(.failure(error))
            throw error
        }
        let address = listener.localAddress!
        listeningAddressLatch.resolve(.success(address))
        logger.info("observability server listening", metadata: ["address": "\(address)"])

        await connections.serve(listener)
        logger.info("observability server stopped", metadata: ["address": "\(address)"])
    }

    private func makeBootstrap(connections: ObservabilityConnections) -> ServerBootstrap {
        let router = router
        let maxRequestBodyBytes = configuration.maxRequestBodyBytes
        let logger = logger
        return ServerBootstrap(group: eventLoopGroup)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard connections.admit(channel) else {
                        throw CancellationError()  // Shutting down: NIO drops the connection.
                    }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        ObservabilityHTTPHandler(
                            router: router,
                            maxRequestBodyBytes: maxRequestBodyBytes,
                            logger: logger
                        )
                    )
                }
            }
    }
}
