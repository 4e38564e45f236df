import Logging
import NIOCore
import NIOPosix
import ProtoBridge
import RPCTLS
import ServiceLifecycle
import YediSync

/// Calls the methods of one service (all its addresses) over pooled TLS connections.
///
/// Its connections live while `run()` runs; `withRPCClient` does that for a scope:
///
/// ```swift
/// try await withRPCClient(configuration: configuration) { client in
///     let echo = YediEcho.Echo.Client(client)
///     let reply = try await echo.echo(.init(text: "안녕"), options: .init(timeout: .seconds(1)))
/// }
/// ```
///
/// Calls pick a ready connection round robin, wait while connections are being established, and fail
/// fast with `UNAVAILABLE` while every connection is failing. Calls to idempotent methods that fail
/// with `UNAVAILABLE` are retried (with backoff, within the deadline and the retry budget); calls that
/// never reached a server are retried on another connection whatever the method.
public final class RPCClient: Service, Sendable {
    public let configuration: ClientConfiguration
    let pool: ConnectionPool

    public init(
        configuration: ClientConfiguration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws(TLSError) {
        self.configuration = configuration
        let tlsContext = try TLSContext(configuration: configuration.tls)
        pool = ConnectionPool(
            ejection: TargetEjection(backoff: configuration.ejectionBackoff, threshold: configuration.ejectionThreshold)
        ) { onStateChange in
            configuration.targets.flatMap { target in
                (0..<configuration.connectionsPerTarget).map { _ in
                    ClientConnection(
                        target: target,
                        configuration: configuration,
                        tlsContext: tlsContext,
                        group: eventLoopGroup,
                        onStateChange: onStateChange
                    )
                }
            }
        }
    }

    /// Keeps the connections up until `beginGracefulShutdown()`, graceful shutdown of the service
    /// group, or cancellation; then lets calls in flight finish and closes.
    public func run() async {
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                for connection in pool.connections {
                    group.addTask { await connection.run() }
                }
                await withTaskCancellationHandler {
                    await group.waitForAll()
                } onCancel: {
                    self.beginGracefulShutdown()
                }
            }
        } onGracefulShutdown: {
            self.beginGracefulShutdown()
        }
    }

    /// New calls fail with `UNAVAILABLE`; connections close once their calls are done.
    public func beginGracefulShutdown() {
        pool.shutdown()
    }

    /// Connections ready for calls.
    public var readyConnectionCount: Int { pool.connections.filter { $0.readyHandler != nil }.count }

    var connectionStates: [ClientConnection.State] { pool.connections.map(\.currentState) }

    /// Connections whose server last said NOT_SERVING on its health watch (for tests).
    var connectionsWhoseServerSaysNotServing: Int { pool.connections.filter(\.serverSaysNotServing).count }

    /// Calls waiting for a connection to become ready (for tests).
    var callsWaitingForConnection: Int { pool.waitingCallCount }

    // MARK: Calls

    /// Sends `request` and returns the response, or throws the call's `RPCError`.
    public func unary<Request, Response>(
        _ method: RPCMethod<Request, Response>,
        _ request: Request,
        options: CallOptions = .defaults
    ) async throws -> Response {
        let reply = try await unary(method.descriptor, payloadBuffer: try encodeRequest(request), options: options)
        do {
            return try Response(buffer: reply.buffer)
        } catch {
            throw RPCError(code: .internalError, message: "the response could not be decoded: \(error)")
        }
    }

    /// A unary call with the request and response as serialized bytes, for callers that know the
    /// types only at run time (the CLI probe).
    public func unary(
        _ method: MethodDescriptor,
        payload: [UInt8],
        options: CallOptions = .defaults
    ) async throws -> RPCRawReply {
        try await unary(method, payloadBuffer: ByteBuffer(bytes: payload), options: options)
    }

    private func unary(
        _ method: MethodDescriptor,
        payloadBuffer payload: ByteBuffer,
        options: CallOptions
    ) async throws -> RPCRawReply {
        let call = makeCall(method, options)
        do {
            return try await configuration.interceptors.run(call) { call in
                let reply = try await self.withAttempts(call) { connection, handler, header, deadline in
                    try await connection.unary(header, payload: payload, deadline: deadline, on: handler)
                }
                return RPCRawReply(buffer: reply.payload, trailers: reply.trailers)
            }
        } catch {
            throw Self.callerFacing(error)
        }
    }

    /// Sends `request` and lets `onResponse` read the response stream; the call is cancelled if
    /// `onResponse` returns or throws before the stream ends.
    public func serverStreaming<Request, Response, Result: Sendable>(
        _ method: RPCMethod<Request, Response>,
        _ request: Request,
        options: CallOptions = .defaults,
        onResponse: (RPCResponseStream<Response>) async throws -> Result
    ) async throws -> Result {
        try await serverStreaming(method.descriptor, payloadBuffer: try encodeRequest(request), options: options) {
            raw in
            try await onResponse(RPCResponseStream(state: raw.state))
        }
    }

    /// A server-streaming call with the request and the responses as serialized bytes.
    public func serverStreaming<Result: Sendable>(
        _ method: MethodDescriptor,
        payload: [UInt8],
        options: CallOptions = .defaults,
        onResponse: (RPCRawResponseStream) async throws -> Result
    ) async throws -> Result {
        try await serverStreaming(
            method, payloadBuffer: ByteBuffer(bytes: payload), options: options, onResponse: onResponse)
    }

    private func serverStreaming<Result: Sendable>(
        _ method: MethodDescriptor,
        payloadBuffer payload: ByteBuffer,
        options: CallOptions,
        onResponse: (RPCRawResponseStream) async throws -> Result
    ) async throws -> Result {
        let call = makeCall(method, options)
        let window = options.streamWindowBytes ?? configuration.streamWindowBytes
        do {
            return try await configuration.interceptors.run(call) { call in
                let stream = ResponseStreamState(windowBytes: window)
                let attempt = StreamAttempt()
                let cancelled = RPCError(code: .cancelled, message: "the call was cancelled")
                @Sendable func launch() async throws {
                    // A stream's start is not an answer: only unary outcomes move a target's ejection.
                    let started = try await self.withAttempts(call, recordsOutcome: false) {
                        connection, handler, header, deadline in
                        let outgoing = connection.startStream(
                            header, payload: payload, deadline: deadline, windowBytes: window, into: stream, on: handler
                        )
                        return (connection, handler, outgoing)
                    }
                    attempt.set(started)
                    // Given up on while this attempt was being made: it must not run on unseen.
                    if stream.isFinished { attempt.cancel(error: cancelled) }
                }
                // An attempt the server never saw is made again, before any message, on any connection.
                stream.restartWhenUnsent(times: pool.connections.count + 1) {
                    Task {
                        do {
                            try await launch()
                        } catch {
                            let error = Self.callerFacing(error)
                            stream.finish(
                                error as? RPCError ?? RPCError(code: .unknown, message: "\(error)"), trailers: [:])
                        }
                    }
                }
                try await launch()
                let giveUp: @Sendable () -> Void = {
                    stream.finish(cancelled, trailers: [:])
                    attempt.cancel(error: cancelled)
                }
                do {
                    let result = try await withTaskCancellationHandler {
                        try await onResponse(RPCRawResponseStream(state: stream))
                    } onCancel: {
                        giveUp()
                    }
                    if !stream.isFinished { giveUp() }
                    return result
                } catch {
                    if !stream.isFinished { giveUp() }
                    throw error
                }
            }
        } catch {
            throw Self.callerFacing(error)
        }
    }

    /// Waits until a connection is ready; throws `RPCConnectionError` saying why none could be made
    /// (TLS, refused, unreachable, timed out). Calls do this implicitly; tools use it to report
    /// connection problems apart from call errors.
    public func waitUntilReady(timeout: Duration) async throws(RPCConnectionError) {
        let deadline = ContinuousClock.now + timeout
        do {
            _ = try await pool.readyConnection(deadline: deadline)
        } catch {
            let causes = pool.connections.compactMap { connection -> (any Error)? in
                if case .transientFailure(_, let cause) = connection.currentState { return cause }
                return nil
            }
            let target = configuration.targets.map(\.description).joined(separator: ", ")
            throw RPCConnectionError(target: target, cause: causes.last, timedOut: ContinuousClock.now >= deadline)
        }
    }

    // MARK: Attempts and retries

    private func makeCall(_ method: MethodDescriptor, _ options: CallOptions) -> ClientCall {
        var deadline = (options.timeout ?? configuration.defaultTimeout).map { ContinuousClock.now + $0 }
        // A handler calling another service passes on what is left of its own deadline.
        if let inherited = ServerContext.current?.deadline, deadline.map({ inherited < $0 }) ?? true {
            deadline = inherited
        }
        return ClientCall(method: method, options: options, deadline: deadline)
    }

    private func encodeRequest(_ request: some ProtoMessage) throws(RPCError) -> ByteBuffer {
        var buffer = ByteBuffer()
        do {
            try request.serialize(into: &buffer)
        } catch {
            throw RPCError(code: .invalidArgument, message: "the request cannot be encoded: \(error)")
        }
        return buffer
    }

    /// Runs `attempt` on a ready connection, again on another one when the call never reached a
    /// server, and again after a backoff when an idempotent call failed with `UNAVAILABLE`.
    private func withAttempts<T>(
        _ call: ClientCall,
        recordsOutcome: Bool = true,
        _ attempt: (ClientConnection, NIOLoopBound<ClientConnectionHandler>, RequestHeader, NIODeadline?) async throws
            -> T
    ) async throws -> T {
        let header = RequestHeader(method: call.method.path, metadata: call.options.metadata)
        let nioDeadline = call.deadline.map { NIODeadline.now() + .nanoseconds(($0 - .now).nanoseconds) }
        let retryable = call.options.retry ?? call.method.idempotency.allowsRetry
        let throttle = configuration.retryThrottle
        var attempts = 0
        var unsentRetries = 0
        /// The targets of the attempts that failed with UNAVAILABLE: a retry goes elsewhere if it can.
        var failedTargets: Set<ClientConfiguration.Target> = []
        while true {
            // Cancellation is checked where each attempt waits for a connection (`readyConnection`).
            attempts += 1
            var used: ClientConnection?
            do {
                let (connection, handler) = try await pool.readyConnection(
                    deadline: call.deadline, avoiding: failedTargets)
                used = connection
                let result = try await attempt(connection, handler, header, nioDeadline)
                if recordsOutcome { pool.record(connection, unavailable: false) }
                if retryable { throttle.recordSuccess() }
                return result
            } catch let unsent as UnsentCallError {
                // Never reached a server: safe to send again, and not a server failure.
                attempts -= 1
                unsentRetries += 1
                guard unsentRetries <= pool.connections.count + 1 else { throw unsent.error }
            } catch let error as RPCError {
                guard let used else { throw error }
                // The target answered: UNAVAILABLE counts toward taking it out of the rotation for a while
                // (the retry below goes to another target, if one is ready); another answer keeps it in.
                // The client's own deadline or cancellation says nothing about the target.
                if recordsOutcome, error.code != .deadlineExceeded, error.code != .cancelled,
                    let ejected = pool.record(used, unavailable: error.code == .unavailable)
                {
                    configuration.logger.debug(
                        "target ejected after UNAVAILABLE",
                        metadata: ["rpc.target": "\(used.target)", "ejected.seconds": "\(ejected.seconds)"])
                }
                guard error.code == .unavailable, retryable else { throw error }
                failedTargets.insert(used.target)
                // Every failed attempt counts against the budget, the last one included.
                let budgetAllows = throttle.recordFailure()
                guard budgetAllows, attempts < configuration.maxAttempts else { throw error }
                let delay = configuration.retryBackoff.delay(attempt: attempts, random: Double.random(in: 0..<1))
                if let deadline = call.deadline, ContinuousClock.now + delay >= deadline { throw error }
                configuration.logger.debug(
                    "retrying after UNAVAILABLE",
                    metadata: ["rpc.method": "\(call.method.path)", "attempt": "\(attempts + 1)"]
                )
                try await Task.sleep(for: delay)
            }
        }
    }

    /// What callers see: always an `RPCError`.
    private static func callerFacing(_ error: any Error) -> any Error {
        switch error {
        case let error as RPCError: error
        case let error as UnsentCallError: error.error
        case is CancellationError: RPCError(code: .cancelled, message: "the call was cancelled")
        default: error
        }
    }
}

/// Runs a client for the duration of `body`, then shuts it down gracefully.
public func withRPCClient<Result: Sendable>(
    configuration: ClientConfiguration,
    eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
    _ body: (RPCClient) async throws -> Result
) async throws -> Result {
    let client = try RPCClient(configuration: configuration, eventLoopGroup: eventLoopGroup)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        do {
            let result = try await body(client)
            client.beginGracefulShutdown()
            try await group.waitForAll()
            return result
        } catch {
            client.beginGracefulShutdown()
            try? await group.waitForAll()
            throw error
        }
    }
}

/// The attempt currently carrying a server-streaming call (it changes when one the server never saw is
/// made again), so that giving up cancels the right one.
private final class StreamAttempt: Sendable {
    private let current = TSanVisibleMutex<(ClientConnection, NIOLoopBound<ClientConnectionHandler>, OutgoingCall)?>(
        nil)

    func set(_ attempt: (ClientConnection, NIOLoopBound<ClientConnectionHandler>, OutgoingCall)) {
        current.withLock { $0 = attempt }
    }

    func cancel(error: RPCError) {
        guard let (connection, handler, outgoing) = current.withLock({ $0 }) else { return }
        connection.cancel(outgoing, on: handler, error: error)
    }
}
