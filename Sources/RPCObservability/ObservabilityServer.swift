import Logging
import NIOCore
import NIOPosix
import Prometheus
import ServiceLifecycle
import SmallHTTPServer

/// A small HTTP/1.1 server for operations: `GET /metrics` renders a Prometheus registry in text exposition
/// format, and `GET /healthz` answers `200 ok` or `503 unavailable` from a health closure. Everything else is
/// 404 (or 405 for methods other than `GET` and `HEAD`). Plain HTTP, meant for loopback.
///
/// It is a `Service`: put it in the process's `ServiceGroup`. ``run()`` binds, serves until graceful shutdown or
/// cancellation, then closes the listener (`HTTPServer` does the serving).
public final class ObservabilityServer: Service {
    public let configuration: Configuration
    private let server: HTTPServer

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
        self.server = HTTPServer(
            name: "observability server",
            configuration: HTTPServerConfiguration(
                host: configuration.host, port: configuration.port,
                maxRequestBodyBytes: configuration.maxRequestBodyBytes),
            responder: ObservabilityRouter(registry: registry, isServing: isServing),
            eventLoopGroup: eventLoopGroup,
            logger: logger)
    }

    /// The address the server listens on, once ``run()`` has bound it (callers wait until then); the way to learn
    /// the port the system picked for port 0. Throws the bind error if binding failed.
    public var listeningAddress: SocketAddress {
        get async throws { try await server.listeningAddress }
    }

    /// The port of ``listeningAddress``.
    public var port: Int {
        get async throws { try await server.port }
    }

    /// Serves until graceful shutdown or cancellation, then closes the listener and every connection.
    /// Callable once per server.
    public func run() async throws {
        try await server.run()
    }
}
