import DequeModule
import Logging
import NIOCore
import ProtoBridge
import RPCTLS

/// The client end of one connection: numbers calls, writes REQUEST frames, matches MESSAGE and END
/// frames to their calls, and keeps the connection honest (server limits, GOAWAY, keepalive). The
/// rules (slots, SETTINGS, GOAWAY, why it closed) live in its `ClientConnectionStateMachine`; this class
/// keeps the calls' objects and timers and does the I/O.
///
/// All state is confined to the channel's event loop; `ClientConnection` reaches it with `onLoop`.
/// Requests started in the same event-loop tick leave in one flush.
final class ClientConnectionHandler: ChannelInboundHandler {
    /// A frame's bytes (`FrameDecoder`), read here (`InboundFrameReader`).
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct Configuration: Sendable {
        var maxConcurrentCalls: Int
        var maxFrameBytes: Int
        /// The most a server's SETTINGS can raise what we accept to (`WireLimits.maxConnectionBytes`).
        var frameCeiling: Int
        /// The limit of this connection's `FrameDecoder`, set to what the server announced.
        var receiveLimit: FrameSizeLimit
        var keepaliveInterval: TimeAmount
        var keepaliveTimeout: TimeAmount
        /// From the TCP connection to the server's SETTINGS (the TLS handshake included).
        var settingsTimeout: TimeAmount
        /// A URI the server's certificate must carry (`spiffe://yedi/service/booking`), if any.
        var expectedServerIdentity: String?
        var logger: Logger
    }

    /// How a call learns its outcome.
    enum Responder: Sendable {
        /// The unary response payload, or the call's error.
        case unary(UnsafeContinuation<UnaryReply, any Error>)
        case stream(ResponseStreamState)
    }

    private let configuration: Configuration
    private var context: ChannelHandlerContext?
    private var state: ClientConnectionStateMachine
    /// Calls sent whose callers wait for them, by wire id.
    private var calls: [UInt64: OutgoingCall] = [:]
    /// Calls waiting for a free slot under the server's concurrency limit, oldest first.
    private var pending: Deque<OutgoingCall> = []
    private var output: FrameOutput?
    /// Reads the frames (`FrameDecoder` passes their bytes).
    private var frames = InboundFrameReader()
    /// What the server remembers of our previous REQUEST, which the next may repeat entries of.
    private var sentMetadata = RememberedRequestMetadata()
    /// A frame did not parse: the connection is failing, and nothing after it is read.
    private var unreadable = false
    private var keepaliveTimer: Scheduled<Void>?
    private var keepaliveDeadline: Scheduled<Void>?
    private var receivedSinceLastPing = false
    /// Fails the connection attempt when the server's SETTINGS do not come.
    private var settingsTimer: Scheduled<Void>?

    /// Fulfilled by the server's SETTINGS frame (the connection is ready), failed if it never comes.
    let ready: EventLoopPromise<Void>
    /// Called once when the server says GOAWAY, so the pool stops choosing this connection.
    private let onGoaway: @Sendable () -> Void

    init(configuration: Configuration, eventLoop: any EventLoop, onGoaway: @escaping @Sendable () -> Void) {
        self.configuration = configuration
        self.state = ClientConnectionStateMachine(
            maxConcurrentCalls: configuration.maxConcurrentCalls, maxFrameBytes: configuration.maxFrameBytes,
            frameCeiling: configuration.frameCeiling)
        self.ready = eventLoop.makePromise()
        self.onGoaway = onGoaway
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        output = FrameOutput(context: context, logger: configuration.logger)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        failEverything(RPCError(code: .unavailable, message: "the connection was closed"))
        self.context = nil
        output = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        settingsTimer = context.eventLoop.assumeIsolated().scheduleTask(in: configuration.settingsTimeout) {
            self.settingsTimedOut()
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        failEverything(RPCError(code: .unavailable, message: "the connection was lost"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let message: String
        switch error {
        case let error as TLSError: message = "connection failed: TLS: \(error)"
        case let error as WireError: message = "the server broke the protocol: \(error)"
        default: message = "connection failed: \(error)"
        }
        state.failed(RPCError(code: .unavailable, message: message))
        // The connection attempt learns the real cause (a TLS failure, say), not just UNAVAILABLE.
        ready.fail(error)
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Any certificate from our CA verifies; only the identity in it says which service answered.
        if case .handshakeCompleted(let info) = event as? TLSEvent, let expected = configuration.expectedServerIdentity,
            !(info.peerIdentity?.uris.contains(expected) ?? false)
        {
            let names = info.peerIdentity?.uris ?? []
            let error = RPCError(
                code: .unavailable,
                message:
                    "the server is not \(expected): its certificate names \(names.isEmpty ? "no service" : "\(names)")"
            )
            state.failed(error)
            ready.fail(error)
            context.close(promise: nil)
            return
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
        receivedSinceLastPing = true
        switch frame.kind {
        case .message: deliverMessage(frame)
        case .end: endCall(frame)
        case .settings: applySettings(frame)
        case .goaway: goaway(frame)
        case .ping:
            let echoed = frame.payload.getSlice(
                at: frame.payload.readerIndex, length: min(frame.payload.readableBytes, WireLimits.maxPongPayloadBytes))
            write(YediRPC.Frame(kind: .pong), payload: echoed)
        case .pong:
            keepaliveDeadline?.cancel()
            keepaliveDeadline = nil
        case .request, .cancel, .windowUpdate:
            state.failed(RPCError(code: .internalError, message: "the server sent a \(frame.kind) frame"))
            context.close(promise: nil)
        case .unspecified, .unrecognized:
            break  // from a newer protocol revision
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushNow()
        context.fireChannelReadComplete()
    }

    // MARK: Starting and cancelling calls

    /// Sends a request, or queues it while the server's concurrency limit is reached.
    func startCall(_ call: OutgoingCall) {
        guard call.state == .new else {
            call.resolveEarlyError()  // cancelled before it got here
            return
        }
        switch state.startDecision() {
        case .failUnsent(let error): call.resolve(error: UnsentCallError(error: error))
        case .wait:
            call.state = .pending
            pending.append(call)
        case .send: send(call)
        }
    }

    /// Sends `call`'s REQUEST, or fails the call alone when the frame cannot be sent: one the server
    /// would refuse (above its announced frame limit) would make it close the connection, and one that
    /// cannot be encoded would never reach it.
    private func send(_ call: OutgoingCall) {
        guard let output else {
            // The handler was removed (failEverything ran): the call never left.
            let error = state.closedError ?? RPCError(code: .unavailable, message: "the connection was closed")
            call.resolve(error: UnsentCallError(error: error))
            return
        }
        var timeoutMicros: UInt64 = 0
        if let deadline = call.deadline {
            guard let micros = Self.timeoutMicros(until: deadline, now: .now()) else {
                call.resolve(
                    error: RPCError(code: .deadlineExceeded, message: "the deadline passed before the call was sent"))
                return
            }
            timeoutMicros = micros
        }
        let callID = state.nextCallID()
        let encoded: ByteBuffer
        do {
            encoded = try output.encodeRequest(
                call.header, callID: callID, timeoutMicros: timeoutMicros, payload: call.payload,
                repeating: sentMetadata.previous)
        } catch {
            call.resolve(error: RPCError(code: .invalidArgument, message: "the request cannot be sent: \(error)"))
            return
        }
        let frameBytes = encoded.readableBytes - 4
        guard frameBytes <= state.maxSendFrameBytes else {
            call.resolve(
                error: RPCError(
                    code: .resourceExhausted,
                    message: "the request frame (\(frameBytes) bytes) exceeds the frame limit of "
                        + "\(state.maxSendFrameBytes) bytes the server announced; nothing was sent"
                )
            )
            return
        }
        if let deadline = call.deadline {
            call.deadlineTimer = context?.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
                self.cancelCall(call, error: RPCError(code: .deadlineExceeded, message: "the deadline passed"))
            }
        }
        call.id = callID
        call.state = .sent
        calls[call.id] = call
        state.callSent(call.id)
        // Before the write: anything the write sets off re-entrantly (a writability change starting
        // another call) must encode against this request, which the server reads first.
        sentMetadata.requestWritten(call.header.metadata)
        output.write(encoded: encoded)
    }

    /// The REQUEST's `timeout_micros` for `deadline`; nil when the deadline has passed. Less than a
    /// microsecond left counts as passed: 0 on the wire would mean "no deadline".
    static func timeoutMicros(until deadline: NIODeadline, now: NIODeadline) -> UInt64? {
        let micros = (deadline - now).nanoseconds / 1_000
        guard micros > 0 else { return nil }
        return UInt64(micros)
    }

    /// The caller gave up (task cancelled, deadline, stream abandoned): tell the server, fail the call.
    func cancelCall(_ call: OutgoingCall, error: RPCError) {
        switch call.state {
        case .done:
            return
        case .new, .pending:
            call.resolve(error: error)  // a pending entry is skipped when its turn comes
        case .sent:
            calls.removeValue(forKey: call.id)
            if state.callAbandoned(call.id) {
                // The reason (CANCELLED or DEADLINE_EXCEEDED) lets the server record what this caller saw.
                write(YediRPC.Frame(callID: call.id, kind: .cancel, status: YediRPC.Status(error.code, "")))
            }
            call.resolve(error: error)
            closeIfIdle()
        }
    }

    /// Lets the server send `bytes` more of a stream's messages.
    func grantWindow(_ call: OutgoingCall, bytes: Int) {
        guard call.state == .sent, bytes > 0 else { return }
        write(YediRPC.Frame(callID: call.id, kind: .windowUpdate, windowBytes: UInt32(clamping: bytes)))
    }

    /// Calls this connection may run at once: ours, lowered to the server's SETTINGS once they arrived.
    var callSlots: Int { state.maxConcurrentCalls }

    /// Calls someone still waits for (calls given up on only wait for their END).
    var activeCalls: Int { state.activeCalls(pending: pending.count) }

    /// Closes the connection once no call is in flight (client shutdown).
    func closeWhenIdle() {
        state.closeWhenIdle()
        closeIfIdle()
    }

    private func closeIfIdle() {
        if state.shouldClose(pending: pending.count) { context?.close(promise: nil) }
    }

    // MARK: Responses

    private func deliverMessage(_ frame: InboundFrame) {
        calls[frame.callID]?.deliver(frame.payload)  // absent: cancelled meanwhile
    }

    private func endCall(_ frame: InboundFrame) {
        switch state.endReceived(frame.callID) {
        case .unknown: return
        case .slotFreed: break  // its caller gave up earlier
        case .resolve:
            guard let call = calls.removeValue(forKey: frame.callID) else { break }
            let trailers = frame.metadata
            call.resolve(
                error: RPCError(wire: frame.status, trailers: trailers), payload: frame.payload, trailers: trailers)
        }
        startPending()
        closeIfIdle()
    }

    private func startPending() {
        while state.hasFreeSlot, let next = pending.popFirst() {
            if next.state == .pending { send(next) }
        }
    }

    // MARK: Connection frames

    private func applySettings(_ frame: InboundFrame) {
        let first = state.settingsReceived(
            maxConcurrentCalls: frame.maxConcurrentCalls, maxFrameBytes: frame.maxFrameBytes)
        // Once: a second SETTINGS must not change what an earlier request was counted against.
        if first { sentMetadata.rememberedBytes = Int(frame.rememberedMetadataBytes) }
        configuration.receiveLimit.bytes = state.maxReceiveFrameBytes
        settingsTimer?.cancel()
        settingsTimer = nil
        startKeepalive()
        ready.succeed()
        startPending()
    }

    /// Calls above `last_call_id` were not processed: they fail as unsent, so they can be retried
    /// elsewhere; calls at or below it still complete.
    private func goaway(_ frame: InboundFrame) {
        guard let unseen = state.goawayReceived(lastCallID: frame.lastCallID) else { return }
        onGoaway()
        let reason = frame.status?.message ?? "the server is going away"
        let unsent = UnsentCallError(error: RPCError(code: .unavailable, message: reason))
        for id in unseen { calls.removeValue(forKey: id)?.resolve(error: unsent) }
        for waiting in pending where waiting.state == .pending {
            waiting.resolve(error: unsent)
        }
        pending.removeAll()
        closeIfIdle()
    }

    /// Pings when nothing arrived for an interval; no PONG within the timeout means the peer is gone.
    private func startKeepalive() {
        guard keepaliveTimer == nil, configuration.keepaliveInterval > .zero else { return }
        scheduleKeepaliveTick()
    }

    private func scheduleKeepaliveTick() {
        guard let context else { return }
        keepaliveTimer = context.eventLoop.assumeIsolated().scheduleTask(in: configuration.keepaliveInterval) {
            self.keepaliveTick()
        }
    }

    private func keepaliveTick() {
        defer { scheduleKeepaliveTick() }
        guard !receivedSinceLastPing else {
            receivedSinceLastPing = false
            return
        }
        guard keepaliveDeadline == nil, let context else { return }
        write(YediRPC.Frame(kind: .ping, payload: [0x79, 0x65, 0x64, 0x69, 0, 0, 0, 1]))
        keepaliveDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: configuration.keepaliveTimeout) {
            self.configuration.logger.notice("keepalive: no answer from the server; closing the connection")
            self.state.failed(RPCError(code: .unavailable, message: "keepalive timeout: the server stopped answering"))
            context.close(promise: nil)
        }
    }

    private func settingsTimedOut() {
        settingsTimer = nil
        guard !state.isReady, let context else { return }
        let error = RPCError(
            code: .unavailable,
            message: "no SETTINGS from the server within \(configuration.settingsTimeout.nanoseconds / 1_000_000) ms"
        )
        state.failed(error)
        ready.fail(error)
        context.close(promise: nil)
    }

    private func failEverything(_ error: RPCError) {
        settingsTimer?.cancel()
        settingsTimer = nil
        keepaliveTimer?.cancel()
        keepaliveTimer = nil
        keepaliveDeadline?.cancel()
        keepaliveDeadline = nil
        let (closedError, running) = state.closed(error)
        ready.fail(closedError)
        let failed = calls
        calls.removeAll()
        for id in running { failed[id]?.resolve(error: closedError) }
        for waiting in pending where waiting.state == .pending {
            waiting.resolve(error: UnsentCallError(error: closedError))
        }
        pending.removeAll()
    }

    // MARK: Writing

    private func write(_ frame: YediRPC.Frame, payload: ByteBuffer? = nil) {
        output?.write(frame, payload: payload)
    }

    private func flushNow() {
        output?.flushNow()
    }
}

/// A call that failed before it reached the server (the connection was closing, or the server's
/// GOAWAY says it did not process it): retrying it is always safe, whatever the method.
struct UnsentCallError: Error {
    let error: RPCError
}

/// One call through a `ClientConnectionHandler`. The caller creates it; from then on only the
/// connection's event loop touches it, which is what makes the unchecked `Sendable` sound.
final class OutgoingCall: @unchecked Sendable {
    enum State { case new, pending, sent, done }

    /// The REQUEST frame's method, metadata and window; the call id and timeout are added when sent.
    let header: RequestHeader
    /// The serialized request.
    let payload: ByteBuffer
    let deadline: NIODeadline?
    /// Set by the caller before the call reaches the loop; resumed exactly once.
    var responder: ClientConnectionHandler.Responder?

    var state = State.new
    var id: UInt64 = 0
    var deadlineTimer: Scheduled<Void>?
    /// A unary response that came as MESSAGE before its END.
    var unaryPayload: ByteBuffer?
    /// Why the call ended before its responder was attached (cancelled before it was started).
    private var earlyError: (any Error)?

    init(
        header: RequestHeader,
        payload: ByteBuffer,
        deadline: NIODeadline?,
        responder: ClientConnectionHandler.Responder? = nil
    ) {
        self.header = header
        self.payload = payload
        self.deadline = deadline
        self.responder = responder
    }

    /// Delivers a message of a call. A stream's messages are copied out of the receive buffer, as they
    /// may wait for their reader; a unary response is decoded as soon as the call ends.
    func deliver(_ payload: ByteBuffer) {
        switch responder {
        case .unary?: unaryPayload = payload
        case .stream(let stream)?: stream.deliver(Array(payload.readableBytesView))
        case nil: break
        }
    }

    /// Ends the call: `error` is an `RPCError`, an `UnsentCallError`, or nil for success.
    func resolve(error: (any Error)?, payload: ByteBuffer? = nil, trailers: Metadata = [:]) {
        state = .done
        deadlineTimer?.cancel()
        deadlineTimer = nil
        guard let responder else {
            earlyError = error ?? earlyError
            return
        }
        self.responder = nil
        switch responder {
        case .unary(let continuation):
            if let error {
                continuation.resume(throwing: error)
            } else {
                continuation.resume(
                    returning: UnaryReply(
                        payload: payload.flatMap { $0.readableBytes > 0 ? $0 : nil } ?? unaryPayload ?? ByteBuffer(),
                        trailers: trailers)
                )
            }
        case .stream(let stream):
            if let unsent = error as? UnsentCallError {
                stream.finishUnsent(unsent.error)
            } else {
                let rpcError = error.map { ($0 as? RPCError) ?? RPCError(code: .unknown, message: "\($0)") }
                stream.finish(rpcError, trailers: trailers)
            }
        }
    }

    /// A call cancelled before it reached the loop fails as soon as its responder is known.
    func resolveEarlyError() {
        if let earlyError, responder != nil { resolve(error: earlyError) }
    }
}

/// The outcome of a successful unary call.
struct UnaryReply: Sendable {
    /// A slice of the bytes received: decoded by the caller, once.
    var payload: ByteBuffer
    var trailers: Metadata
}
