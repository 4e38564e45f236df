import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import RPCTLS
import ServiceLifecycle
import Synchronization

/// A small HTTP/1.1 server (GET and HEAD, keep-alive, pipelining, bounded bodies, connections and queued
/// writes), optionally over TLS, answering from a `HTTPResponder`: the observability port (`/metrics`,
/// `/healthz`) and ContentService's image port are two of these.
///
/// It is a `Service`: put it in the process's `ServiceGroup`. ``run()`` binds, serves until graceful shutdown or
/// cancellation, then closes the listener. On graceful shutdown, connections finish the request they are in and
/// close; on cancellation they are closed at once (ServiceGroup cancels a service that overruns its graceful
/// shutdown timeout, which also cuts off a client stalling mid-request).
public final class HTTPServer: Service {
    public let configuration: HTTPServerConfiguration
    private let responder: any HTTPResponder
    private let tlsContext: TLSContext?
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let name: String
    private let listeningAddressLatch = ListeningAddressLatch()
    private let hasRun = Atomic<Bool>(false)

    /// - Parameters:
    ///   - name: What the logs call it ("observability server", "image server").
    ///   - tls: TLS with RPCTLS's OpenSSL handler in front of HTTP/1.1, as on the RPC port; nil serves plain
    ///     HTTP (the loopback-only observability port).
    ///   - eventLoopGroup: Where connections are served; NIO's shared group unless the caller has its own.
    public init(
        name: String,
        configuration: HTTPServerConfiguration,
        tls: TLSContext? = nil,
        responder: any HTTPResponder,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger
    ) {
        self.name = name
        self.configuration = configuration
        self.responder = responder
        self.tlsContext = tls
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
            "HTTPServer.run() may be called only once"
        )
        let connections = HTTPConnections(limit: configuration.maxConnections)
        let listener: any Channel
        do {
            listener = try await makeBootstrap(connections: connections)
                .bind(host: configuration.host, port: configuration.port)
                .get()
        } catch {
            logger.error("\(name) failed to bind", metadata: ["error": "\(error)"])
            listeningAddressLatch.resolve(.failure(error))
            throw error
        }
        let address = listener.localAddress!
        listeningAddressLatch.resolve(.success(address))
        logger.info("\(name) listening", metadata: ["address": "\(address)"])

        // Serve until graceful shutdown or cancellation closes the listener...
        await withTaskCancellationOrGracefulShutdownHandler {
            try? await listener.closeFuture.get()
        } onCancelOrGracefulShutdown: {
            listener.close(promise: nil)
        }
        // ...then let connections finish the request in hand, unless cancellation says to cut them off.
        await withTaskCancellationHandler {
            await connections.drain()
        } onCancel: {
            connections.closeAll()
        }
        logger.info("\(name) stopped", metadata: ["address": "\(address)"])
    }

    private func makeBootstrap(connections: HTTPConnections) -> ServerBootstrap {
        let responder = responder
        let tlsContext = tlsContext
        let configuration = configuration
        let logger = logger
        return ServerBootstrap(group: eventLoopGroup)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(
                .writeBufferWaterMark,
                value: .init(low: configuration.writeBufferBytes / 2, high: configuration.writeBufferBytes)
            )
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard connections.admit(channel) else {
                        throw CancellationError()  // Shutting down, or full: NIO drops the connection.
                    }
                    let pipeline = channel.pipeline.syncOperations
                    if let tlsContext {
                        try pipeline.addHandler(try TLSHandler(serverContext: tlsContext))
                    }
                    try pipeline.addHandler(
                        IdleStateHandler(readTimeout: .nanoseconds(configuration.idleTimeout.nanoseconds)))
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(
                        HTTPExchangeHandler(
                            responder: responder,
                            maxRequestBodyBytes: configuration.maxRequestBodyBytes,
                            logger: logger
                        )
                    )
                }
            }
    }
}

extension Duration {
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
