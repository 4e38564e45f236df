import Logging
import NIOCore
import NIOPosix
import RPCTLS
import ServiceLifecycle
import Synchronization
import YediSync

/// Hosts services over TLS: accepts connections, runs a `ServerConnectionHandler` on each, and shuts
/// down gracefully.
///
/// Run it in a `ServiceGroup` (which turns SIGTERM/SIGINT into graceful shutdown) or call `run()`
/// directly. Graceful shutdown stops accepting, marks the server NOT_SERVING, sends GOAWAY on every
/// connection, lets calls in flight finish within `shutdownGracePeriod`, then cancels what is left.
/// Every server hosts the health service (`health`).
public final class RPCServer: Service, Sendable {
    public let configuration: ServerConfiguration
    /// The health service this server hosts.
    public let health: HealthService

    private let router: RPCRouter
    private let interceptors: [any ServerInterceptor]
    private let tlsContext: TLSContext
    private let group: any EventLoopGroup
    private let logger: Logger
    private let connections = ConnectionRegistry()
    private let shutdownRequested = OneShotSignal()
    private let bound = TSanVisibleMutex<BindState>(.notYet([]))

    private enum BindState {
        case notYet([CheckedContinuation<SocketAddress, any Error>])
        case bound(SocketAddress)
        case failed(any Error)
    }

    /// - Parameters:
    ///   - services: The services to host, besides health.
    ///   - placeholders: Services whose methods answer `UNIMPLEMENTED` until handlers exist.
    ///   - interceptors: Run around every call, the first outermost.
    public init(
        configuration: ServerConfiguration,
        services: [any RPCService],
        placeholders: [ServiceDescriptor] = [],
        interceptors: [any ServerInterceptor] = [],
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "yedi.rpc.server")
    ) throws(TLSError) {
        self.configuration = configuration
        self.interceptors = interceptors
        self.group = eventLoopGroup
        self.logger = logger
        self.tlsContext = try TLSContext(configuration: configuration.tls)
        let health = HealthService()
        self.health = health
        var router = RPCRouter()
        router.register(health)
        for service in services { router.register(service) }
        for service in placeholders { router.registerPlaceholder(for: service) }
        self.router = router
    }

    /// The address the server listens on, once it does (useful with port 0).
    public func listeningAddress() async throws -> SocketAddress {
        try await withCheckedThrowingContinuation { continuation in
            let result = bound.withLock { state -> Result<SocketAddress, any Error>? in
                switch state {
                case .notYet(var waiters):
                    waiters.append(continuation)
                    state = .notYet(waiters)
                    return nil
                case .bound(let address): return .success(address)
                case .failed(let error): return .failure(error)
                }
            }
            if let result { continuation.resume(with: result) }
        }
    }

    /// Every method this server routes, health included.
    public var methods: [MethodDescriptor] { router.methods }

    /// Serves until graceful shutdown (or cancellation, which skips the grace period).
    public func run() async throws {
        let channel: any Channel
        do {
            channel = try await bind()
        } catch {
            setBindState(.failed(error))
            throw error
        }
        let address = channel.localAddress!
        setBindState(.bound(address))
        logger.info("listening", metadata: ["address": "\(address)"])
        let services = Set(router.methods.map(\.service))
        for service in services { health.setStatus(.serving, for: service) }
        health.setStatus(.serving, for: "")

        let cancelled = Atomic<Bool>(false)
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await shutdownRequested.wait()
            } onCancel: {
                cancelled.store(true, ordering: .relaxed)
                self.shutdownRequested.fire()
            }
        } onGracefulShutdown: {
            self.beginGracefulShutdown()
        }

        // Drain: no new connections, GOAWAY on the others, then wait for their calls.
        for service in services { health.setStatus(.notServing, for: service) }
        health.setStatus(.notServing, for: "")
        try? await channel.close()
        // Cancellation (a service group's shutdown timeout ran out) leaves no time for calls in flight.
        let grace = cancelled.load(ordering: .relaxed) ? .zero : configuration.shutdownGracePeriod
        logger.info("shutting down", metadata: ["connections": "\(connections.count)", "grace": "\(grace)"])
        connections.drainAll(gracePeriod: .nanoseconds(grace.nanoseconds))
        await connections.waitUntilEmpty()
        logger.info("stopped")
    }

    /// Starts graceful shutdown; `run()` returns once the connections are closed.
    public func beginGracefulShutdown() {
        shutdownRequested.fire()
    }

    private func setBindState(_ new: BindState) {
        let waiters = bound.withLock { state -> [CheckedContinuation<SocketAddress, any Error>] in
            guard case .notYet(let waiters) = state else { return [] }
            state = new
            return waiters
        }
        for waiter in waiters {
            switch new {
            case .bound(let address): waiter.resume(returning: address)
            case .failed(let error): waiter.resume(throwing: error)
            case .notYet: break
            }
        }
    }

    private func bind() async throws -> any Channel {
        let executors = Dictionary(
            uniqueKeysWithValues: group.makeIterator().map { (ObjectIdentifier($0), EventLoopExecutor($0)) }
        )
        let replyBuffers = Dictionary(
            uniqueKeysWithValues: group.makeIterator().map { (ObjectIdentifier($0), ReplyBufferPool(eventLoop: $0)) }
        )
        let handlerConfiguration = ServerConnectionHandler.Configuration(
            limits: configuration.limits,
            idleTimeout: .nanoseconds(configuration.idleTimeout.nanoseconds),
            defaultStreamWindowBytes: configuration.defaultStreamWindowBytes,
            replyStallTimeout: .nanoseconds(configuration.replyStallTimeout.nanoseconds),
            router: router,
            interceptors: interceptors,
            executor: EventLoopExecutor(group.any()),
            replyBuffers: ReplyBufferPool(eventLoop: group.any()),
            userTag: configuration.userTag,
            logger: logger
        )
        let tlsContext = tlsContext
        let connections = connections
        let maxFrameBytes = configuration.limits.maxFrameBytes
        return try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.socketOption(.so_keepalive), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    var perConnection = handlerConfiguration
                    perConnection.executor =
                        executors[ObjectIdentifier(channel.eventLoop)] ?? EventLoopExecutor(channel.eventLoop)
                    perConnection.replyBuffers =
                        replyBuffers[ObjectIdentifier(channel.eventLoop)]
                        ?? ReplyBufferPool(eventLoop: channel.eventLoop)
                    try channel.pipeline.syncOperations.addHandlers(
                        try TLSHandler(serverContext: tlsContext),
                        ByteToMessageHandler(FrameDecoder(maxFrameBytes: maxFrameBytes)),
                        ServerConnectionHandler(configuration: perConnection, registry: connections)
                    )
                }
            }
            .bind(host: configuration.host, port: configuration.port)
            .get()
    }
}
