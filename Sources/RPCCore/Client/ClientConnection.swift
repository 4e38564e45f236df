import Logging
import NIOCore
import NIOPosix
import RPCTLS
import Synchronization
import YediSync

/// One connection slot of a client: connects to its target, reconnects with jittered exponential
/// backoff when the connection fails or closes, and carries calls while it is ready.
final class ClientConnection: Sendable {
    enum State {
        case idle
        case connecting
        case ready(handler: NIOLoopBound<ClientConnectionHandler>, channel: any Channel)
        /// The last attempt failed (`cause` is what failed: a TLS error, a refused connection, …);
        /// the next one starts after a backoff delay.
        case transientFailure(RPCError, cause: any Error)
        case shutdown
    }

    let target: ClientConfiguration.Target
    private let configuration: ClientConfiguration
    private let tlsContext: TLSContext
    private let group: any EventLoopGroup
    private let state = TSanVisibleMutex(State.idle)
    /// Set by GOAWAY: the connection still finishes its calls but takes no new ones. Its own object, so
    /// the channel handler can set it without holding the connection.
    private let goingAway = Flag()
    /// What the server says of its health, when the client watches it (several targets).
    private let health: ServerHealthWatch?
    private let shutdownRequested = Atomic<Bool>(false)
    /// The connection loop while it waits to reconnect.
    private let sleeper = TSanVisibleMutex<CheckedContinuation<Void, Never>?>(nil)
    /// Tells the pool that this slot's state changed, so waiting calls look again.
    private let onStateChange: @Sendable () -> Void
    private let logger: Logger

    init(
        target: ClientConfiguration.Target,
        configuration: ClientConfiguration,
        tlsContext: TLSContext,
        group: any EventLoopGroup,
        onStateChange: @escaping @Sendable () -> Void
    ) {
        self.target = target
        self.configuration = configuration
        self.tlsContext = tlsContext
        self.group = group
        self.onStateChange = onStateChange
        health =
            configuration.watchesHealth && configuration.targets.count > 1
            ? ServerHealthWatch(retryDelay: configuration.healthWatchRetryDelay) : nil
        var logger = configuration.logger
        logger[metadataKey: "rpc.target"] = "\(target)"
        self.logger = logger
    }

    /// The handler to start a call on, when the connection is ready and not going away.
    var readyHandler: NIOLoopBound<ClientConnectionHandler>? {
        guard !goingAway.value.load(ordering: .relaxed) else { return nil }
        return state.withLock { state in
            if case .ready(let handler, _) = state { return handler }
            return nil
        }
    }

    var currentState: State { state.withLock { $0 } }

    /// The server said NOT_SERVING on this connection's health watch (never, without one).
    var serverSaysNotServing: Bool { health?.saysNotServing ?? false }

    // MARK: Connection loop

    /// Connects, and reconnects after failures and closes, until `shutdown()`.
    func run() async {
        var failures = 0
        var refused = false
        while !shutdownRequested.load(ordering: .relaxed), !Task.isCancelled {
            setState(.connecting)
            do {
                let (channel, handler) = try await connect()
                goingAway.value.store(false, ordering: .relaxed)
                if let health {
                    let slots = try? await handler.eventLoop.submit { handler.value.callSlots }.get()
                    health.start(on: self, handler: handler, callSlots: slots ?? 0, onChange: onStateChange)
                }
                setState(.ready(handler: handler, channel: channel))
                let connectedAt = ContinuousClock.now
                if shutdownRequested.load(ordering: .relaxed) {
                    health?.stop(on: self)
                    closeWhenIdle(handler)
                }
                try? await channel.closeFuture.get()
                // A connection that dies at once counts as a failure, so a server that accepts and
                // drops connections is not hammered.
                failures = ContinuousClock.now - connectedAt < .seconds(1) ? failures + 1 : 0
                refused = false
                setState(.idle)
            } catch {
                failures += 1
                refused = Self.isRefusal(error)
                let failure = RPCError(
                    code: .unavailable, message: "cannot connect to \(target): \(Self.describe(error))")
                logger.debug("connection attempt failed", metadata: ["error": "\(failure.message)"])
                setState(.transientFailure(failure, cause: error))
            }
            guard failures > 0, !shutdownRequested.load(ordering: .relaxed) else { continue }
            let backoff = refused ? configuration.refusedReconnectBackoff : configuration.reconnectBackoff
            await pause(for: backoff.delay(attempt: failures, random: Double.random(in: 0..<1)))
        }
        setState(.shutdown)
    }

    /// Sleeps between reconnection attempts; `shutdown()` ends the sleep at once.
    private func pause(for delay: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let sleepNow = sleeper.withLock { sleeper -> Bool in
                guard !shutdownRequested.load(ordering: .relaxed) else { return false }
                sleeper = continuation
                return true
            }
            guard sleepNow else { return continuation.resume() }
            group.any().scheduleTask(in: .nanoseconds(delay.nanoseconds)) { self.wake() }
        }
    }

    private func wake() {
        sleeper.withLock { sleeper in
            defer { sleeper = nil }
            return sleeper
        }?.resume()
    }

    /// Stops reconnecting and closes the connection once its calls are done.
    func shutdown() {
        shutdownRequested.store(true, ordering: .relaxed)
        wake()
        let ready = state.withLock { state -> NIOLoopBound<ClientConnectionHandler>? in
            if case .ready(let handler, _) = state { return handler }
            return nil
        }
        if let ready {
            // The watch is a call too: cancelled first (on the loop, before the close), so that closing
            // once idle does not wait for it.
            health?.stop(on: self)
            closeWhenIdle(ready)
        }
    }

    private func closeWhenIdle(_ handler: NIOLoopBound<ClientConnectionHandler>) {
        handler.eventLoop.execute { handler.value.closeWhenIdle() }
    }

    private func setState(_ new: State) {
        state.withLock { $0 = new }
        onStateChange()
    }

    private func connect() async throws -> (any Channel, NIOLoopBound<ClientConnectionHandler>) {
        let receiveLimit = FrameSizeLimit(configuration.limits.maxFrameBytes)
        let handlerConfiguration = ClientConnectionHandler.Configuration(
            maxConcurrentCalls: configuration.limits.maxConcurrentCalls,
            maxFrameBytes: configuration.limits.maxFrameBytes,
            frameCeiling: configuration.limits.maxConnectionBytes,
            receiveLimit: receiveLimit,
            keepaliveInterval: .nanoseconds(configuration.keepaliveInterval.nanoseconds),
            keepaliveTimeout: .nanoseconds(configuration.keepaliveTimeout.nanoseconds),
            settingsTimeout: .nanoseconds(configuration.connectTimeout.nanoseconds),
            expectedServerIdentity: configuration.expectedServerIdentity,
            logger: logger
        )
        let serverName = configuration.serverName ?? target.host
        let tlsContext = tlsContext
        let goingAway = goingAway
        let onStateChange = onStateChange
        let (channel, handler) = try await ClientBootstrap(group: group)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(.socketOption(.so_keepalive), value: 1)
            .connectTimeout(.nanoseconds(configuration.connectTimeout.nanoseconds))
            .connect(host: target.host, port: target.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    // Before the connection handler: a server name OpenSSL refuses ("", too long) throws
                    // here, and a handler dropped with its `ready` promise unfulfilled traps in debug builds.
                    let tls = try TLSHandler(clientContext: tlsContext, serverName: serverName)
                    let handler = ClientConnectionHandler(
                        configuration: handlerConfiguration,
                        eventLoop: channel.eventLoop,
                        onGoaway: {
                            goingAway.value.store(true, ordering: .relaxed)
                            onStateChange()
                        }
                    )
                    do {
                        try channel.pipeline.syncOperations.addHandlers(
                            tls,
                            ByteToMessageHandler(FrameDecoder(limit: receiveLimit)),
                            handler
                        )
                    } catch {
                        handler.ready.fail(error)
                        throw error
                    }
                    return (channel, NIOLoopBound(handler, eventLoop: channel.eventLoop))
                }
            }
        do {
            // Ready once TLS is up and the server's SETTINGS arrived.
            try await handler.eventLoop.flatSubmit { handler.value.ready.futureResult }.get()
        } catch {
            channel.close(promise: nil)
            throw error
        }
        return (channel, handler)
    }

    /// Whether a connection attempt was refused (ECONNREFUSED on every address tried): nothing listens
    /// there now, which the host said at once.
    static func isRefusal(_ error: any Error) -> Bool {
        switch error {
        case let error as IOError: error.errnoCode == ECONNREFUSED
        case let error as NIOConnectionError:
            !error.connectionErrors.isEmpty && error.connectionErrors.allSatisfy { isRefusal($0.error) }
        default: false
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case let error as RPCError: error.message
        case let error as TLSError: "TLS: \(error)"
        default: "\(error)"
        }
    }

    // MARK: Calls

    /// Runs a unary call on this connection; returns the response payload.
    func unary(
        _ header: RequestHeader,
        payload: ByteBuffer,
        deadline: NIODeadline?,
        on handler: NIOLoopBound<ClientConnectionHandler>
    ) async throws -> UnaryReply {
        let call = OutgoingCall(header: header, payload: payload, deadline: deadline)
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<UnaryReply, any Error>) in
                start(call, responder: .unary(continuation), on: handler)
            }
        } onCancel: {
            cancel(call, on: handler, error: RPCError(code: .cancelled, message: "the call was cancelled"))
        }
    }

    /// Starts a server-streaming call on this connection.
    func startStream(
        _ header: RequestHeader,
        payload: ByteBuffer,
        deadline: NIODeadline?,
        windowBytes: Int,
        into stream: ResponseStreamState,
        on handler: NIOLoopBound<ClientConnectionHandler>
    ) -> OutgoingCall {
        var header = header
        header.windowBytes = UInt32(clamping: windowBytes)
        let call = OutgoingCall(header: header, payload: payload, deadline: deadline)
        stream.attach { bytes in
            handler.eventLoop.execute { handler.value.grantWindow(call, bytes: bytes) }
        }
        start(call, responder: .stream(stream), on: handler)
        return call
    }

    func cancel(_ call: OutgoingCall, on handler: NIOLoopBound<ClientConnectionHandler>, error: RPCError) {
        handler.eventLoop.execute { handler.value.cancelCall(call, error: error) }
    }

    /// The responder is attached on the loop, where every other access to the call happens.
    private func start(
        _ call: OutgoingCall,
        responder: ClientConnectionHandler.Responder,
        on handler: NIOLoopBound<ClientConnectionHandler>
    ) {
        if handler.eventLoop.inEventLoop {
            call.responder = responder
            handler.value.startCall(call)
        } else {
            handler.eventLoop.execute {
                call.responder = responder
                handler.value.startCall(call)
            }
        }
    }
}

/// A flag shared between threads.
private final class Flag: Sendable {
    let value = Atomic<Bool>(false)
}
