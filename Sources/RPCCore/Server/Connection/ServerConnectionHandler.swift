import Logging
import NIOCore
import ProtoBridge
import RPCTLS

/// Serves the calls of one client connection: turns frames and timers into events for its
/// `ServerConnectionStateMachine`, and performs the actions it returns (start a call's task, send END,
/// GOAWAY, cancel, close). The rules live in the state machine; this class does the I/O.
///
/// Sits after the TLS handler and the frame decoder. All state is confined to the channel's event
/// loop; call tasks reach it through `ServerCallHandle`. Replies are written as calls finish and
/// flushed once per event-loop tick, so calls that finish together leave in one TLS record.
///
/// While the connection cannot send (its peer does not read what we write), it asks for no more input:
/// every frame read may make us write (a PONG, a refusal, a reply), so reading on would queue without
/// bound. Replies (a unary response, a stream message) count against the connection's memory budget
/// until written; one that does not fit waits (a stream's write with it), and a peer that lets them
/// stall for `replyStallTimeout` is dropped.
final class ServerConnectionHandler: ChannelDuplexHandler {
    /// A frame's bytes (`FrameDecoder`), read here (`InboundFrameReader`).
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct Configuration: Sendable {
        var limits: WireLimits
        var idleTimeout: TimeAmount
        var defaultStreamWindowBytes: Int
        /// Replies outstanding and none written (nor the socket's queue shrinking) for this long: close.
        var replyStallTimeout: TimeAmount = ReplyStallWatch.defaultTimeout
        var router: RPCRouter
        var interceptors: [any ServerInterceptor]
        var executor: EventLoopExecutor
        /// The loop's buffers of written replies (one pool per event loop, like `executor`).
        var replyBuffers: ReplyBufferPool
        var userTag: LogUserTag = .perProcess
        var logger: Logger
    }

    /// What the handler keeps for a call besides its state in the machine, which holds it in the call's
    /// entry (one table for both): its task, timer and flow control, and while it is held, what it
    /// starts with. It is the call's `CallRecord` too (what its context shares: method, deadline, peer,
    /// logger; how the connection and the interceptors tell each other of its end), so that a call is
    /// one object; only this connection, on its event loop, touches what this class adds.
    ///
    /// It holds nothing of the connection, and lets go of its task once the call is over (`forget`): a
    /// context a handler keeps after its call (a test's probe, a registry) keeps this object alive, and
    /// must not keep the connection, nor a cycle through the task that holds the context.
    final class RunningCall: CallRecord, @unchecked Sendable {
        let id: UInt64
        var task: Task<Void, Never>?
        /// The deadline: before a held call starts, then while its handler runs.
        var deadlineTimer: Scheduled<Void>?
        /// Streaming: bytes the client still lets us send.
        var window: Int
        /// Streaming: the handler waiting to send more.
        var writer: (write: StreamWrite, continuation: UnsafeContinuation<Void, any Error>)?
        /// Streaming: the writer's message waits for room in the memory budget; it resumes after.
        var messageWaiting = false
        /// Where its method's reply sizes are recorded.
        let replySizes: ReplySizeEstimate
        /// A held call's request, until its handler starts.
        var held: (frame: InboundFrame, route: RPCRoute, deadline: NIODeadline?)?

        init(
            id: UInt64, method: MethodDescriptor, metadata: Metadata, deadline: ContinuousClock.Instant?,
            peer: PeerInfo, userTag: LogUserTag, logger: Logger, window: Int, replySizes: ReplySizeEstimate
        ) {
            self.id = id
            self.window = window
            self.replySizes = replySizes
            super.init(
                method: method, metadata: metadata, deadline: deadline, peer: peer, userTag: userTag, logger: logger)
        }

        /// The call is over for this connection: nothing more is sent, and its task is let go.
        func forget() {
            stopSending()
            held = nil
            task = nil
        }

        /// Nothing more is sent for it: its timer stops and a waiting write fails.
        func stopSending() {
            deadlineTimer?.cancel()
            deadlineTimer = nil
            writer?.continuation.resume(throwing: CancellationError())
            writer = nil
        }
    }

    // Internal rather than private only for ServerConnectionHandler+Replies.swift: the same class, split
    // by concern.
    let configuration: Configuration
    private let runner: ServerCallRunner
    private let registry: ConnectionRegistry
    var logger: Logger
    var context: ChannelHandlerContext?
    private var peer = PeerInfo(address: "unknown")
    /// The calls (with their `RunningCall`s) and the waiting replies (their frames): the one table of each.
    var state: StateMachine
    var output: FrameOutput?
    private var idleTimer: Scheduled<Void>?
    private var graceTimer: Scheduled<Void>?
    var stallTimer: Scheduled<Void>?
    typealias StateMachine = ServerConnectionStateMachine<RunningCall, QueuedReply>

    /// A reply frame waiting in the state machine for room in the memory budget.
    struct QueuedReply {
        let frame: ByteBuffer
        /// The streaming call whose MESSAGE this is (its writer waits for it); nil for an END.
        let messageOf: RunningCall?
    }

    /// Reads the frames; metadata entries past the limit are counted, not kept (one more than the limit
    /// is kept, so that the limit's check refuses the call).
    private var frames: InboundFrameReader
    /// A frame did not parse: the connection is being closed, and nothing after it is read.
    private var unreadable = false

    /// A read asked for while the connection could not send, issued once it can.
    private var readHeld = false
    /// The replies queued in the socket when this read began. Read once per read, not per request: the
    /// replies of this read are flushed only after it, so the figure cannot change within it.
    private var queuedRepliesAtRead: Int?

    init(configuration: Configuration, registry: ConnectionRegistry) {
        self.configuration = configuration
        self.runner = ServerCallRunner(
            interceptors: configuration.interceptors, executor: configuration.executor, registry: registry)
        self.registry = registry
        self.logger = configuration.logger
        self.state = ServerConnectionStateMachine(
            limits: configuration.limits, replyStallTimeout: configuration.replyStallTimeout)
        self.frames = InboundFrameReader(
            maxMetadataEntries: configuration.limits.maxMetadataEntries + 1,
            rememberedMetadataBytes: InboundFrameReader.rememberedMetadataBytes(under: configuration.limits))
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        output = FrameOutput(context: context, logger: logger, recycler: configuration.replyBuffers)
        // Cleared in handlerRemoved with the output, which ends the cycle through this closure.
        output?.countedWritten = { bytes in self.replyWritten(bytes) }
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
                    maxFrameBytes: UInt32(clamping: configuration.limits.maxFrameBytes),
                    rememberedMetadataBytes: UInt32(clamping: frames.rememberedMetadataBytes)
                )
            )
            armIdleTimer()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !unreadable else { return }
        let frame: InboundFrame
        do {
            frame = try frames.read(unwrapInboundIn(data))
        } catch {
            unreadable = true
            errorCaught(context: context, error: error)
            return
        }
        switch frame.kind {
        case .request: requestReceived(frame)
        case .cancel: cancelReceived(frame.callID, reason: frame.status)
        case .windowUpdate: grantWindow(frame.callID, bytes: Int(frame.windowBytes))
        case .ping:
            let echoed = frame.payload.getSlice(
                at: frame.payload.readerIndex, length: min(frame.payload.readableBytes, WireLimits.maxPongPayloadBytes))
            write(YediRPC.Frame(kind: .pong), payload: echoed)
        case .pong: break
        case .message, .end, .goaway, .settings:
            closeWithGoaway(WireError.unexpectedFrame("\(frame.kind) frames are sent by servers, not clients"))
        case .unspecified, .unrecognized:
            // A kind from a newer protocol revision: ignoring it keeps old servers compatible.
            logger.debug("ignoring a frame of unknown kind", metadata: ["kind": "\(frame.kind.rawValue)"])
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        queuedRepliesAtRead = nil
        flushNow()
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            for call in state.calls.values where call.resources.window > 0 { resumeWriter(of: call.resources) }
            if readHeld {
                readHeld = false
                context.read()
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        guard context.channel.isWritable else {
            readHeld = true
            return
        }
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

    private func requestReceived(_ frame: InboundFrame) {
        guard let context else { return }
        let id = frame.callID
        let route = configuration.router.route(for: frame.method)
        let cost = ConnectionMemoryBudget.cost(of: frame)
        let queuedReplies =
            queuedRepliesAtRead ?? (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        queuedRepliesAtRead = queuedReplies
        let share =
            route.map { route in
                let bytes = route.replySizes.bytes(cold: configuration.limits.maxFrameBytes)
                return bytes > 0 ? bytes + WireLimits.envelopeOverhead : 0
            } ?? 0
        let request = StateMachine.Request(
            id: id, kind: route?.method.kind, metadata: frame.metadataSize, cost: cost, queuedReplies: queuedReplies,
            replyShare: share)
        // The deadline runs from the request's arrival, even while the call is held.
        var deadline: NIODeadline?
        if frame.timeoutMicros > 0 {
            deadline = .now() + .microseconds(Int64(clamping: min(frame.timeoutMicros, UInt64(Int64.max / 1_000))))
        }
        var admitted: RunningCall?
        let windowBytes = frame.windowBytes
        let metadata = frame.metadata
        let action = state.requestReceived(request) {
            // Only a routed call is admitted (the machine refuses one of no kind).
            let call = makeCall(id, windowBytes: windowBytes, metadata: metadata, route: route!, deadline: deadline)
            admitted = call
            return call
        }
        switch action {
        case .start:
            guard let route, let admitted else { return }
            start(admitted, frame: frame, route: route, deadline: deadline, context: context)
        case .hold:
            guard let route, let admitted else { return }
            idleTimer?.cancel()
            idleTimer = nil
            admitted.held = (frame, route, deadline)
            admitted.deadlineTimer = deadline.map { deadline in
                context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
                    self.endEarly(
                        id, RPCError(code: .deadlineExceeded, message: "the deadline passed before the call started"))
                }
            }
        case .refuse(let error):
            refuse(id, error, route: route)
        case .refuseUnknownMethod:
            refuse(id, RPCError(code: .unimplemented, message: unknownMethodMessage(frame.method)))
        case .closeWithGoaway(let error):
            closeWithGoaway(error)
        case .ignore:
            break
        }
    }

    /// Starts the held calls whose reply's share fits now.
    func startHeldCalls() {
        guard let context else { return }
        for call in state.callsToStart() {
            guard let held = call.held else { continue }
            call.held = nil
            start(call, frame: held.frame, route: held.route, deadline: held.deadline, context: context)
        }
    }

    /// The handler's object for a call the machine admitted.
    private func makeCall(
        _ id: UInt64, windowBytes: UInt32, metadata: Metadata, route: RPCRoute, deadline: NIODeadline?
    ) -> RunningCall {
        let window = windowBytes > 0 ? Int(windowBytes) : configuration.defaultStreamWindowBytes
        return RunningCall(
            id: id, method: route.method, metadata: metadata,
            deadline: deadline.map { .now + .nanoseconds(($0 - .now()).nanoseconds) }, peer: peer,
            userTag: configuration.userTag, logger: logger, window: window, replySizes: route.replySizes)
    }

    private func start(
        _ call: RunningCall, frame: InboundFrame, route: RPCRoute, deadline: NIODeadline?,
        context: ChannelHandlerContext
    ) {
        let id = call.id
        idleTimer?.cancel()
        idleTimer = nil
        call.deadlineTimer?.cancel()  // a held call's
        call.deadlineTimer = nil
        if let deadline {
            call.deadlineTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
                self.endEarly(
                    id,
                    RPCError(code: .deadlineExceeded, message: "the deadline passed before the call completed")
                )
            }
        }

        let serverContext = ServerContext(record: call)
        // The way back to this connection lives in the task only (a value: no allocation).
        let handle = ServerCallHandle(
            id: id,
            connection: NIOLoopBound(self, eventLoop: context.eventLoop),
            maxPayloadBytes: configuration.limits.maxFrameBytes - WireLimits.envelopeOverhead,
            replyBuffers: configuration.replyBuffers
        )
        call.task = route.start(frame.payload, runner, consume handle, consume serverContext)
    }

    /// Called by the call's task (through its handle) once the handler and the interceptors returned:
    /// answers the call if its answer is still due, and frees its slot.
    func handlerReturned(_ id: UInt64, outcome: ServerCallOutcome) {
        let (end, next, call) = state.handlerReturned(id)
        call?.forget()
        switch outcome {
        case .answered(_, let messageBytes?), .unencodable(_, let messageBytes?): call?.replySizes.record(messageBytes)
        default: break
        }
        switch end {
        case .sendOutcome:
            switch outcome {
            case .answered(let frame, _): sendReply(frame)
            case .unencodable(let error, _): endUnencodable(id, error)
            case .failed(let error): writeEnd(id, error: error)
            }
        case .sendOwedEnd(let error): writeEnd(id, error: error)
        case .nothing: break
        }
        perform(next)
        startHeldCalls()
        if let reason = call?.closeReason {
            beginDraining(gracePeriod: .seconds(5), reason: reason)
        }
    }

    /// `reason`: why the client gave up, if it said; its own deadline is the one reason told apart.
    private func cancelReceived(_ id: UInt64, reason: YediRPC.Status?) {
        let error =
            reason?.statusCode == .deadlineExceeded
            ? RPCError(code: .deadlineExceeded, message: "the deadline passed (the client's clock)")
            : RPCError(code: .cancelled, message: "the client cancelled the call")
        endEarly(id, error)
    }

    /// The call is over for its client (cancelled, expired); its END waits for its handler.
    private func endEarly(_ id: UInt64, _ error: RPCError) {
        if let held = state.heldCallEnded(id) {
            held.call.forget()
            writeEnd(id, error: error)
            perform(held.next)
            return
        }
        guard let call = state.endEarly(id, owing: error) else { return }
        call.record(error)
        call.stopSending()
        call.task?.cancel()
    }

    /// Ends calls for their clients at once with `error` (shutdown), cancelling their handlers (a held
    /// call has none yet: its timer stops).
    private func endNow(_ calls: [RunningCall], _ error: RPCError) {
        for call in calls {
            // Recorded before the handler can see its cancellation.
            call.record(error)
            call.stopSending()
            writeEnd(call.id, error: error)
            call.task?.cancel()
        }
    }

    /// Ends a call that never started; the interceptors hear of it when its method is known.
    private func refuse(_ id: UInt64, _ error: RPCError, route: RPCRoute? = nil) {
        writeEnd(id, error: error)
        guard let method = route?.method else { return }
        var logger = logger
        logger[metadataKey: "rpc.method"] = "\(method.path)"
        for interceptor in configuration.interceptors { interceptor.callRefused(method, error: error, logger: logger) }
    }

    private func perform(_ action: StateMachine.ConnectionAction) {
        switch action {
        case .nothing: break
        case .armIdleTimer: armIdleTimer()
        case .close: closeAfterFlush()
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

    private static func endFrame(_ id: UInt64, error: RPCError) -> YediRPC.Frame {
        YediRPC.Frame(callID: id, kind: .end, metadata: error.metadata.wire, status: YediRPC.Status(error))
    }

    // MARK: Streaming flow control

    /// `frame`: the message's finished MESSAGE frame (`ServerCallHandle.encodeMessage`).
    func sendStreamMessage(
        _ id: UInt64, frame: ByteBuffer, messageBytes: Int, write stream: StreamWrite,
        continuation: UnsafeContinuation<Void, any Error>
    ) {
        guard let call = state.sendingCall(id), let context, !stream.isCancelled else {
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
        call.window -= messageBytes
        call.messageWaiting = !sendReply(frame, messageOf: call)
        if !call.messageWaiting, call.window > 0, context.channel.isWritable {
            continuation.resume()
        } else {
            call.writer = (stream, continuation)
        }
    }

    /// `write` was cancelled: it stops waiting, if it is the write waiting (not another task's).
    func abandonStreamWrite(_ id: UInt64, _ write: StreamWrite) {
        guard let call = state.call(id), let writer = call.writer, writer.write === write else { return }
        call.writer = nil
        writer.continuation.resume(throwing: CancellationError())
    }

    private func grantWindow(_ id: UInt64, bytes: Int) {
        guard let call = state.sendingCall(id) else { return }
        call.window = call.window.addingReportingOverflow(bytes).overflow ? .max : call.window + bytes
        if call.window > 0, context?.channel.isWritable == true { resumeWriter(of: call) }
    }

    func resumeWriter(of call: RunningCall) {
        guard !call.messageWaiting, let writer = call.writer else { return }
        call.writer = nil
        writer.continuation.resume()
    }

    // MARK: Connection lifecycle

    /// Graceful shutdown: GOAWAY now, refuse new calls, end open streams at once (UNAVAILABLE: their
    /// clients reconnect elsewhere rather than wait for a stream that would be cut anyway), close when
    /// the unary calls in flight are done or when `gracePeriod` has passed (then they are cancelled).
    ///
    /// Also when a call asked for it (`ServerContext.closeConnectionAfterThisCall`), with its reason.
    func beginDraining(
        gracePeriod: TimeAmount,
        reason: RPCError = RPCError(code: .unavailable, message: "the server is shutting down")
    ) {
        guard let context, let drain = state.beginDraining() else { return }
        write(
            YediRPC.Frame(
                kind: .goaway,
                status: YediRPC.Status(reason.code, reason.message),
                lastCallID: drain.lastCallID
            )
        )
        endNow(
            drain.streamsToEnd,
            RPCError(code: .unavailable, message: "the server is shutting down: reconnect to continue")
        )
        flushNow()
        if drain.closeNow {
            closeAfterFlush()
            return
        }
        graceTimer = context.eventLoop.assumeIsolated().scheduleTask(in: gracePeriod) {
            self.endNow(self.state.gracePeriodEnded(), RPCError(code: .unavailable, message: "the server stopped"))
            // The grace period is over for handlers too: shutdown does not wait on one that ignores
            // cancellation (closing cancels what is left).
            self.closeAfterFlush()
        }
    }

    private func armIdleTimer() {
        guard let context, idleTimer == nil, configuration.idleTimeout > .zero else { return }
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(in: configuration.idleTimeout) {
            self.idleTimer = nil
            guard self.state.idleTimerFired() else { return }
            self.logger.debug("closing an idle connection")
            self.write(
                YediRPC.Frame(
                    kind: .goaway,
                    status: YediRPC.Status(.unavailable, "idle connection closed"),
                    lastCallID: self.state.highestCallID
                )
            )
            self.closeAfterFlush()
        }
    }

    private func closeWithGoaway(_ error: WireError) {
        guard let context else { return }
        state.protocolViolated()
        write(YediRPC.Frame(kind: .goaway, status: error.status, lastCallID: state.highestCallID))
        flushNow()
        context.close(promise: nil)
    }

    /// A graceful close: the replies still waiting for the budget leave first.
    private func closeAfterFlush() {
        for waiting in state.releaseWaitingReplies() { writeCounted(waiting.reply.frame) }
        flushNow()
        context?.close(promise: nil)
    }

    /// The one place a connection's calls are torn down: the connection is gone, every handler still
    /// running is cancelled.
    private func tearDown() {
        idleTimer?.cancel()
        idleTimer = nil
        graceTimer?.cancel()
        graceTimer = nil
        stallTimer?.cancel()
        stallTimer = nil
        // Held calls too: their timers stop.
        for call in state.connectionClosed() {
            call.task?.cancel()
            call.forget()
        }
        registry.remove(id: ObjectIdentifier(self))
    }

    // MARK: Writing

    /// Ends call `id` for the client with `error`, uncounted (refusals and statuses are small, and
    /// bounded by reading; a handler's reply goes through the memory budget: `sendReply`).
    private func writeEnd(_ id: UInt64, error: RPCError) {
        guard let output else { return }
        do {
            output.write(encoded: try output.encode(Self.endFrame(id, error: error)))
        } catch {
            endUnencodable(id, error)
        }
    }

    /// A status or trailers that cannot be encoded (a NUL in them) still end the call, as INTERNAL:
    /// otherwise its caller would wait forever.
    private func endUnencodable(_ id: UInt64, _ error: ProtoEncodingError) {
        logger.error("the end of call \(id) could not be encoded: \(error)")
        let fallback = RPCError(code: .internalError, message: "the call's status could not be encoded")
        output?.write(Self.endFrame(id, error: fallback))
    }

    private func write(_ frame: YediRPC.Frame, payload: ByteBuffer? = nil) {
        output?.write(frame, payload: payload)
    }

    private func flushNow() {
        output?.flushNow()
    }
}
