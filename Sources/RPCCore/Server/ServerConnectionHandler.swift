import Logging
import NIOCore
import ProtoBridge

/// Serves the calls of one client connection: starts a handler task per REQUEST frame, answers with
/// MESSAGE and END frames, and enforces limits, deadlines, cancellation, flow control and shutdown.
///
/// Sits after the TLS handler and the frame decoder. All state is confined to the channel's event
/// loop; handler tasks reach it through `ServerCallHandle`. Replies are written as calls finish and
/// flushed once per event-loop tick, so calls that finish together leave in one TLS record.
///
/// While the connection cannot send (its peer does not read what we write), it asks for no more input:
/// every frame read may make us write (a PONG, a refusal, a reply), so reading on would queue without
/// bound.
final class ServerConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct Configuration: Sendable {
        var limits: WireLimits
        var idleTimeout: TimeAmount
        var defaultStreamWindowBytes: Int
        var router: RPCRouter
        var interceptors: [any ServerInterceptor]
        var executor: EventLoopExecutor
        var logger: Logger
    }

    /// A call whose handler is running, as the connection tracks it. It stays in the table, and counts
    /// against the concurrency limit, until its handler returns, even once the call ended for the client
    /// (cancelled, expired): the limit bounds handlers that actually run. Its END is sent then, so the
    /// client, which counts the call until its END, never sends a call this side must refuse.
    private final class Call {
        let handle: ServerCallHandle
        var task: Task<Void, Never>?
        /// The call is over (answered, cancelled, expired): no message is sent for it any more.
        var ended = false
        /// The END for a call that ended before its handler returned, sent when it returns.
        var owedEnd: RPCError?
        /// What the call's request counts against the connection's memory budget.
        var heldBytes = 0
        /// The status of an end that came before the handler returned, for the interceptors.
        let endRecord = CallEndRecord()
        var deadlineTimer: Scheduled<Void>?
        /// Streaming: bytes the client still lets us send.
        var window: Int
        /// Streaming: the handler waiting to send more.
        var writer: UnsafeContinuation<Void, any Error>?

        init(handle: ServerCallHandle, window: Int) {
            self.handle = handle
            self.window = window
        }
    }

    private let configuration: Configuration
    private let runner: ServerCallRunner
    private let registry: ConnectionRegistry
    private var logger: Logger
    private var context: ChannelHandlerContext?
    private var peer = PeerInfo(address: "unknown")
    private var calls: [UInt64: Call] = [:]
    private var highestCallID: UInt64 = 0
    private var draining = false
    private var output: FrameOutput?
    private var idleTimer: Scheduled<Void>?
    private var graceTimer: Scheduled<Void>?
    /// A read asked for while the connection could not send, issued once it can.
    private var readHeld = false
    private var budget: ConnectionMemoryBudget

    init(configuration: Configuration, registry: ConnectionRegistry) {
        self.configuration = configuration
        self.runner = ServerCallRunner(
            interceptors: configuration.interceptors, executor: configuration.executor, registry: registry)
        self.registry = registry
        self.logger = configuration.logger
        self.budget = ConnectionMemoryBudget(limit: configuration.limits.maxConnectionBytes)
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        output = FrameOutput(context: context, logger: logger)
        peer = PeerInfo(address: context.channel.remoteAddress.map { "\($0)" } ?? "unknown")
        logger[metadataKey: "peer"] = "\(peer.address)"
        registry.add(NIOLoopBound(self, eventLoop: context.eventLoop), id: ObjectIdentifier(self))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        tearDown()
        self.context = nil
        output = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        tearDown()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let info)? = event as? TLSEvent {
            peer = PeerInfo(address: peer.address, identity: info.peerIdentity)
            if let identity = info.peerIdentity { logger[metadataKey: "peer-identity"] = "\(identity)" }
            write(
                YediRPC.Frame(
                    kind: .settings,
                    maxConcurrentCalls: UInt32(clamping: configuration.limits.maxConcurrentCalls),
                    maxFrameBytes: UInt32(clamping: configuration.limits.maxFrameBytes)
                )
            )
            armIdleTimer()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame: YediRPC.Frame
        do {
            frame = try YediRPC.Frame.decoding(unwrapInboundIn(data))
        } catch {
            logger.notice("closing the connection: \(error)")
            closeWithGoaway(error)
            return
        }
        switch frame.kind {
        case .request: startCall(frame)
        case .cancel: cancelCall(frame.callID, reason: frame.status)
        case .windowUpdate: grantWindow(frame.callID, bytes: Int(frame.windowBytes))
        case .ping:
            write(YediRPC.Frame(kind: .pong, payload: Array(frame.payload.prefix(WireLimits.maxPongPayloadBytes))))
        case .pong: break
        case .message, .end, .goaway, .settings:
            closeWithGoaway(WireError.unexpectedFrame("\(frame.kind) frames are sent by servers, not clients"))
        case .unspecified, .unrecognized:
            // A kind from a newer protocol revision: ignoring it keeps old servers compatible.
            logger.debug("ignoring a frame of unknown kind", metadata: ["kind": "\(frame.kind.rawValue)"])
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushNow()
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            for call in calls.values where call.window > 0 { resumeWriter(of: call) }
            resumeReadingIfAllowed()
        }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        guard mayRead(context) else {
            readHeld = true
            return
        }
        context.read()
    }

    private func mayRead(_ context: ChannelHandlerContext) -> Bool {
        context.channel.isWritable
    }

    private func resumeReadingIfAllowed() {
        guard readHeld, let context, mayRead(context) else { return }
        readHeld = false
        context.read()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case WireError.truncatedFrame:
            logger.debug("connection ended inside a frame")
        case let error as WireError:
            logger.notice("closing the connection: \(error)")
            closeWithGoaway(error)
        case let error as TLSError:
            logger.debug("TLS: \(error)")
            context.close(promise: nil)
        default:
            logger.debug("closing the connection after an error: \(error)")
            context.close(promise: nil)
        }
    }

    // MARK: Calls

    private func startCall(_ frame: YediRPC.Frame) {
        let id = frame.callID
        guard id > highestCallID else {
            closeWithGoaway(WireError.unexpectedFrame("call id \(id) is not above the previous one (\(highestCallID))"))
            return
        }
        highestCallID = id
        let route = configuration.router.route(for: frame.method)
        guard !draining else {
            return refuse(id, RPCError(code: .unavailable, message: "the server is shutting down"), route: route)
        }
        guard calls.count < configuration.limits.maxConcurrentCalls else {
            return refuse(
                id,
                RPCError(
                    code: .resourceExhausted,
                    message: "more than \(configuration.limits.maxConcurrentCalls) concurrent calls on one connection"
                ),
                route: route
            )
        }
        do {
            try configuration.limits.checkRequestMetadata(frame.metadata)
        } catch {
            return refuse(id, error, route: route)
        }
        guard let route else {
            return refuse(id, RPCError(code: .unimplemented, message: unknownMethodMessage(frame.method)))
        }
        guard let context else { return }
        let cost = ConnectionMemoryBudget.cost(of: frame)
        let queuedReplies = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        guard budget.admitCall(cost, queuedReplies: queuedReplies) else {
            return refuse(
                id,
                RPCError(
                    code: .resourceExhausted,
                    message: "the connection's memory budget (\(budget.limit) bytes) is taken by the calls in "
                        + "flight and the replies not yet sent"
                ),
                route: route
            )
        }

        idleTimer?.cancel()
        idleTimer = nil
        let handle = ServerCallHandle(
            id: id,
            method: route.method,
            connection: NIOLoopBound(self, eventLoop: context.eventLoop),
            maxPayloadBytes: configuration.limits.maxFrameBytes - WireLimits.envelopeOverhead
        )
        let window = frame.windowBytes > 0 ? Int(frame.windowBytes) : configuration.defaultStreamWindowBytes
        let call = Call(handle: handle, window: window)
        call.heldBytes = cost
        calls[id] = call

        var deadline: ContinuousClock.Instant?
        if frame.timeoutMicros > 0 {
            let micros = Int64(clamping: min(frame.timeoutMicros, UInt64(Int64.max / 1_000)))
            deadline = .now + .microseconds(micros)
            call.deadlineTimer = context.eventLoop.assumeIsolated().scheduleTask(in: .microseconds(micros)) {
                self.expireCall(id)
            }
        }

        var serverContext = ServerContext(
            method: route.method,
            metadata: Metadata(frame.metadata),
            deadline: deadline,
            peer: peer,
            logger: logger
        )
        serverContext.endRecord = call.endRecord
        call.task = runner.start(route, payload: frame.payload, handle: handle, context: serverContext)
    }

    /// Sends the call's END (a unary response, or the status); a no-op when the call already ended
    /// (deadline, cancellation, shutdown). Its handler may still be running.
    private func finishCall(_ id: UInt64, error: RPCError?, payload: ByteBuffer? = nil, trailers: Metadata = [:]) {
        guard let call = calls[id], !call.ended else { return }
        end(call)
        writeEnd(id, error: error, payload: payload, trailers: trailers)
    }

    /// Called by the call's task (through its handle) once the handler and the interceptors returned:
    /// answers the call if it had not ended, and frees its slot.
    func handlerReturned(_ id: UInt64, outcome: Result<ServerResponse, RPCError>) {
        if let owed = calls[id]?.owedEnd {
            writeEnd(id, error: owed)
        } else {
            switch outcome {
            case .success(let response):
                finishCall(id, error: nil, payload: response.message, trailers: response.trailers)
            case .failure(let error): finishCall(id, error: error)
            }
        }
        guard let call = calls.removeValue(forKey: id) else { return }
        budget.callEnded(call.heldBytes)
        callEnded()
    }

    private func expireCall(_ id: UInt64) {
        guard let call = calls[id], !call.ended else { return }
        let error = RPCError(code: .deadlineExceeded, message: "the deadline passed before the call completed")
        call.endRecord.record(error)
        end(call, owing: error)
        call.task?.cancel()
    }

    /// `reason`: why the client gave up, if it said; its own deadline is the one reason told apart.
    private func cancelCall(_ id: UInt64, reason: YediRPC.Status?) {
        guard let call = calls[id], !call.ended else { return }
        let expired = reason?.statusCode == .deadlineExceeded
        let error =
            expired
            ? RPCError(code: .deadlineExceeded, message: "the deadline passed (the client's clock)")
            : RPCError(code: .cancelled, message: "the client cancelled the call")
        call.endRecord.record(error)
        end(call, owing: error)
        call.task?.cancel()
    }

    /// Nothing more is sent for `call`; it keeps its slot until its handler returns. `owing`: the END
    /// to send then.
    private func end(_ call: Call, owing owedEnd: RPCError? = nil) {
        call.ended = true
        call.owedEnd = owedEnd
        call.deadlineTimer?.cancel()
        call.deadlineTimer = nil
        call.writer?.resume(throwing: CancellationError())
        call.writer = nil
    }

    /// Ends a call that never started; the interceptors hear of it when its method is known.
    private func refuse(_ id: UInt64, _ error: RPCError, route: RPCRoute? = nil) {
        writeEnd(id, error: error)
        guard let method = route?.method else { return }
        var logger = logger
        logger[metadataKey: "rpc.method"] = "\(method.path)"
        for interceptor in configuration.interceptors { interceptor.callRefused(method, error: error, logger: logger) }
    }

    private func callEnded() {
        if calls.isEmpty {
            if draining {
                closeAfterFlush()
            } else {
                armIdleTimer()
            }
        }
    }

    private func unknownMethodMessage(_ path: String) -> String {
        let parts = path.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].isEmpty else { return "malformed method path \"\(Self.excerpt(path[...]))\"" }
        let service = parts[1]
        if configuration.router.methods.contains(where: { $0.service == service }) {
            return "unknown method \(Self.excerpt(parts[2])) of service \(service)"
        }
        return "unknown service \(Self.excerpt(service))"
    }

    /// Names what a peer sent in a refusal, without sending back more than a line of it.
    private static func excerpt(_ text: Substring) -> String {
        let limit = 100
        guard text.utf8.count > limit else { return String(text) }
        return String(decoding: text.utf8.prefix(limit), as: UTF8.self) + "…"
    }

    private static func endFrame(_ id: UInt64, error: RPCError?, trailers: Metadata = [:]) -> YediRPC.Frame {
        YediRPC.Frame(
            callID: id,
            kind: .end,
            metadata: error?.metadata.wire ?? trailers.wire,
            status: error.map(YediRPC.Status.init)
        )
    }

    // MARK: Streaming flow control

    func sendStreamMessage(_ id: UInt64, payload: ByteBuffer, continuation: UnsafeContinuation<Void, any Error>) {
        guard let call = calls[id], !call.ended, let context else {
            continuation.resume(throwing: CancellationError())
            return
        }
        guard call.writer == nil else {
            // Taking its place would lose the waiting write; queueing behind it would send messages
            // in an order nobody chose.
            continuation.resume(
                throwing: RPCError(
                    code: .failedPrecondition,
                    message: "RPCWriter.write was called while another write of the same stream was waiting"
                )
            )
            return
        }
        write(YediRPC.Frame(callID: id, kind: .message), payload: payload)
        call.window -= payload.readableBytes
        if call.window > 0, context.channel.isWritable {
            continuation.resume()
        } else {
            call.writer = continuation
        }
    }

    func abandonStreamWrite(_ id: UInt64) {
        guard let call = calls[id], let writer = call.writer else { return }
        call.writer = nil
        writer.resume(throwing: CancellationError())
    }

    private func grantWindow(_ id: UInt64, bytes: Int) {
        guard let call = calls[id], !call.ended else { return }
        call.window = call.window.addingReportingOverflow(bytes).overflow ? .max : call.window + bytes
        if call.window > 0, context?.channel.isWritable == true { resumeWriter(of: call) }
    }

    private func resumeWriter(of call: Call) {
        guard let writer = call.writer else { return }
        call.writer = nil
        writer.resume()
    }

    // MARK: Connection lifecycle

    /// Graceful shutdown: GOAWAY now, refuse new calls, end open streams at once (UNAVAILABLE: their
    /// clients reconnect elsewhere rather than wait for a stream that would be cut anyway), close when
    /// the unary calls in flight are done or when `gracePeriod` has passed (then they are cancelled).
    func beginDraining(gracePeriod: TimeAmount) {
        guard !draining, let context else { return }
        draining = true
        write(
            YediRPC.Frame(
                kind: .goaway,
                status: YediRPC.Status(.unavailable, "the server is shutting down"),
                lastCallID: highestCallID
            )
        )
        let reconnect = RPCError(code: .unavailable, message: "the server is shutting down: reconnect to continue")
        for (id, call) in calls where !call.ended && call.handle.method.kind != .unary {
            call.endRecord.record(reconnect)
            finishCall(id, error: reconnect)
            call.task?.cancel()
        }
        flushNow()
        if calls.isEmpty {
            closeAfterFlush()
            return
        }
        graceTimer = context.eventLoop.assumeIsolated().scheduleTask(in: gracePeriod) {
            let stopped = RPCError(code: .unavailable, message: "the server stopped")
            for (id, call) in self.calls where !call.ended {
                // Recorded before the handler can see its cancellation.
                call.endRecord.record(stopped)
                self.finishCall(id, error: stopped)
                call.task?.cancel()
            }
            // The grace period is over for handlers too: shutdown does not wait on one that ignores
            // cancellation (closing cancels what is left).
            self.closeAfterFlush()
        }
    }

    private func armIdleTimer() {
        guard let context, idleTimer == nil, configuration.idleTimeout > .zero else { return }
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(in: configuration.idleTimeout) {
            self.idleTimer = nil
            guard self.calls.isEmpty, !self.draining else { return }
            self.logger.debug("closing an idle connection")
            self.draining = true
            self.write(
                YediRPC.Frame(
                    kind: .goaway,
                    status: YediRPC.Status(.unavailable, "idle connection closed"),
                    lastCallID: self.highestCallID
                )
            )
            self.closeAfterFlush()
        }
    }

    private func closeWithGoaway(_ error: WireError) {
        guard let context else { return }
        draining = true
        write(YediRPC.Frame(kind: .goaway, status: error.status, lastCallID: highestCallID))
        flushNow()
        context.close(promise: nil)
    }

    private func closeAfterFlush() {
        flushNow()
        context?.close(promise: nil)
    }

    private func tearDown() {
        idleTimer?.cancel()
        idleTimer = nil
        graceTimer?.cancel()
        graceTimer = nil
        for call in calls.values {
            call.deadlineTimer?.cancel()
            call.task?.cancel()
            call.writer?.resume(throwing: CancellationError())
            call.writer = nil
        }
        calls.removeAll()
        registry.remove(id: ObjectIdentifier(self))
    }

    // MARK: Writing

    /// Ends call `id` for the client. A status or trailers that cannot be encoded (a NUL in them) still
    /// end the call, as INTERNAL: otherwise its caller would wait forever.
    private func writeEnd(_ id: UInt64, error: RPCError?, payload: ByteBuffer? = nil, trailers: Metadata = [:]) {
        guard let output else { return }
        do {
            output.write(
                encoded: try output.encode(Self.endFrame(id, error: error, trailers: trailers), payload: payload))
        } catch {
            logger.error("the end of call \(id) could not be encoded: \(error)")
            let fallback = RPCError(code: .internalError, message: "the call's status could not be encoded")
            output.write(Self.endFrame(id, error: fallback))
        }
    }

    private func write(_ frame: YediRPC.Frame, payload: ByteBuffer? = nil) {
        output?.write(frame, payload: payload)
    }

    private func flushNow() {
        output?.flushNow()
    }
}
