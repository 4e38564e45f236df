import NIOCore
import ProtoBridge

/// The life of one server connection as a value: which calls run, which ended for their client, what
/// the connection still accepts, and when it closes. Events go in as method calls and what to do comes
/// back as actions, which `ServerConnectionHandler` performs (frames, task cancellation, timers, close).
///
/// It does no I/O, so every rule here is tested without sockets or TLS
/// (`ServerConnectionStateMachineTests`), as swift-nio's and postgres-nio's connection state machines are.
///
/// It is the connection's one table of calls and of waiting replies: each entry also carries what the
/// handler keeps for it (`CallResources`: its task, timers, flow control; `Reply`: an encoded frame),
/// handed back in the actions that need them, so the handler keeps no second table keyed the same way.
/// Tests use plain values for both.
struct ServerConnectionStateMachine<CallResources, Reply> {
    enum Phase: Equatable {
        /// Serving calls.
        case serving
        /// GOAWAY sent: new calls are refused; the connection closes when the calls in flight are done.
        case draining
        /// Closing: nothing more is accepted or sent.
        case closed
    }

    /// A call whose handler runs. It keeps its slot and its share of the memory budget until its
    /// handler returns, even once it ended for its client: the limits bound handlers that run.
    struct Call {
        let isStream: Bool
        let heldBytes: Int
        /// Set aside for its reply once it starts (a unary call's `ReplySizeEstimate`).
        var replyShare = 0
        /// False while it waits for room for `replyShare`; its handler has not started.
        var started = true
        /// Over for its client: nothing more is sent for it but the END it is owed.
        var ended = false
        /// The END to send when the handler returns, for a call that ended early (the client cancelled,
        /// the deadline passed): sent then, so the client frees its slot when this side does.
        var owedEnd: RPCError?
        /// The handler's own objects for the call.
        let resources: CallResources
    }

    private(set) var phase = Phase.serving
    private(set) var calls: [UInt64: Call] = [:]
    private(set) var highestCallID: UInt64 = 0
    private(set) var budget: ConnectionMemoryBudget
    private(set) var stall: ReplyStallWatch
    /// Replies that did not fit in the budget, in the order their handlers produced them.
    private(set) var waitingReplies: [WaitingReply] = []
    /// Calls accepted that wait, in order, for room to set their reply's share aside.
    private(set) var heldCalls: [UInt64] = []
    /// Calls started with a reply's share set aside: kept as a count rather than found by a scan of
    /// `calls` at every start (a scan per call is quadratic in the calls in flight).
    private var startedWithShare = 0
    private var lastTicket: UInt64 = 0
    let limits: WireLimits

    init(limits: WireLimits, replyStallTimeout: TimeAmount = ReplyStallWatch.defaultTimeout) {
        self.limits = limits
        self.budget = ConnectionMemoryBudget(limit: limits.maxConnectionBytes)
        self.stall = ReplyStallWatch(timeout: replyStallTimeout)
    }

    // MARK: Requests

    /// A REQUEST frame, as far as the rules need it.
    struct Request {
        var id: UInt64
        /// The routed method's kind; nil for a method this server does not serve.
        var kind: RPCKind?
        /// As the frame reader counted it.
        var metadata: MetadataSize
        /// What the call would hold while it runs (`ConnectionMemoryBudget.cost(of:)`).
        var cost: Int
        /// Replies written and not yet sent on the connection.
        var queuedReplies: Int
        /// To set aside for a unary call's reply (`ReplySizeEstimate`); 0 for none.
        var replyShare = 0
    }

    enum RequestAction: Equatable {
        /// Run the handler.
        case start
        /// Accepted, but its handler waits to start until its reply's share fits (`callsToStart`).
        case hold
        /// Answer END with this status at once (the interceptors hear of it).
        case refuse(RPCError)
        /// Answer END `UNIMPLEMENTED`: the method is not served here.
        case refuseUnknownMethod
        /// The peer broke the protocol: GOAWAY with this error, then close.
        case closeWithGoaway(WireError)
        /// Closing: ignore it.
        case ignore
    }

    /// The checks, in order: call ids only grow, shutdown, the concurrency limit, the metadata limits, the
    /// method, the memory budget (no call starts while replies wait for it: its reply would wait too).
    /// A unary call whose reply's share does not fit yet is held: it keeps its slot and starts later.
    /// `resources` makes the handler's objects for a call admitted (started or held), and only for one.
    mutating func requestReceived(_ request: Request, resources: () -> CallResources) -> RequestAction {
        guard phase != .closed else { return .ignore }
        guard request.id > highestCallID else {
            phase = .closed
            return .closeWithGoaway(
                .unexpectedFrame("call id \(request.id) is not above the previous one (\(highestCallID))"))
        }
        highestCallID = request.id
        guard phase == .serving else {
            return .refuse(RPCError(code: .unavailable, message: "the server is shutting down"))
        }
        guard calls.count < limits.maxConcurrentCalls else {
            return .refuse(
                RPCError(
                    code: .resourceExhausted,
                    message: "more than \(limits.maxConcurrentCalls) concurrent calls on one connection"
                )
            )
        }
        do {
            try limits.checkRequestMetadata(request.metadata)
        } catch {
            return .refuse(error)
        }
        guard let kind = request.kind else { return .refuseUnknownMethod }
        guard waitingReplies.isEmpty, budget.admitCall(request.cost, queuedReplies: request.queuedReplies) else {
            return .refuse(
                RPCError(
                    code: .resourceExhausted,
                    message: "the connection's memory budget (\(budget.limit) bytes) is taken by the calls in "
                        + "flight and the replies not yet sent (read the replies to make room)"
                )
            )
        }
        let share = kind == .unary ? max(0, request.replyShare) : 0
        guard share > 0 else {
            calls[request.id] = Call(isStream: kind != .unary, heldBytes: request.cost, resources: resources())
            return .start
        }
        // Nobody waits before it and its share fits: it starts at once (the common case, with no
        // list of calls to start made for it).
        if heldCalls.isEmpty, budget.setAside(share, alone: nothingSetAside) {
            calls[request.id] = Call(
                isStream: false, heldBytes: request.cost, replyShare: share, resources: resources())
            startedWithShare += 1
            return .start
        }
        calls[request.id] = Call(
            isStream: false, heldBytes: request.cost, replyShare: share, started: false, resources: resources())
        heldCalls.append(request.id)
        return .hold
    }

    /// No reply is held in the budget and no started call has a share set aside: a share larger than
    /// the budget is then let through alone (`ConnectionMemoryBudget.setAside`).
    private var nothingSetAside: Bool { budget.heldByReplies == 0 && startedWithShare == 0 }

    /// The held calls whose reply's share fits now, in order: start their handlers. Called when memory
    /// is freed (a handler returned, a reply was written).
    mutating func callsToStart() -> [CallResources] {
        guard phase != .closed else { return [] }
        var starting: [CallResources] = []
        while let id = heldCalls.first, let call = calls[id] {
            guard budget.setAside(call.replyShare, alone: nothingSetAside) else { break }
            heldCalls.removeFirst()
            calls[id]!.started = true
            if call.replyShare > 0 { startedWithShare += 1 }
            starting.append(call.resources)
        }
        return starting
    }

    /// A held call ended before it started (the client cancelled, the deadline passed): nil when it is
    /// not held; otherwise it is gone (its resources handed back), and what the connection does next.
    /// Its END is sent at once.
    mutating func heldCallEnded(_ id: UInt64) -> (call: CallResources, next: ConnectionAction)? {
        guard let index = heldCalls.firstIndex(of: id), let call = calls[id] else { return nil }
        heldCalls.remove(at: index)
        return (call.resources, handlerReturned(id).next)
    }

    // MARK: Calls ending

    /// The handler's resources of call `id` (started or held), while it is in the table.
    func call(_ id: UInt64) -> CallResources? {
        calls[id]?.resources
    }

    /// The resources of call `id` while messages may still be sent for it; nil once it is over for its
    /// client.
    func sendingCall(_ id: UInt64) -> CallResources? {
        guard let call = calls[id], !call.ended else { return nil }
        return call.resources
    }

    /// Whether messages may still be sent for call `id`.
    func isSending(_ id: UInt64) -> Bool {
        sendingCall(id) != nil
    }

    /// The client cancelled, or the deadline passed: the call is over for its client, and `owing` is
    /// the END it gets when the handler returns. Its resources when the handler must be told
    /// (cancelled); nil when it was over already or is unknown.
    mutating func endEarly(_ id: UInt64, owing status: RPCError) -> CallResources? {
        guard var call = calls[id], !call.ended else { return nil }
        call.ended = true
        call.owedEnd = status
        calls[id] = call
        return call.resources
    }

    /// What to send when a handler returns.
    enum ReturnAction: Equatable {
        /// The handler's outcome (its response, or its error).
        case sendOutcome
        /// The END the call was owed since it ended early.
        case sendOwedEnd(RPCError)
        /// Nothing: its END went out already (shutdown ended it), or the call is unknown.
        case nothing
    }

    /// What the connection does next.
    enum ConnectionAction: Equatable {
        case nothing
        /// No call left: start counting idleness.
        case armIdleTimer
        /// Draining and no call left: close.
        case close
    }

    /// A handler returned: its END (if still due), its slot and its memory are released, and its
    /// resources handed back (nil for a call the table no longer has).
    mutating func handlerReturned(_ id: UInt64) -> (end: ReturnAction, next: ConnectionAction, call: CallResources?) {
        guard let call = calls.removeValue(forKey: id) else { return (.nothing, .nothing, nil) }
        budget.callEnded(call.heldBytes + (call.started ? call.replyShare : 0))
        if call.started, call.replyShare > 0 { startedWithShare -= 1 }
        let end: ReturnAction =
            if let owed = call.owedEnd { .sendOwedEnd(owed) } else if call.ended { .nothing } else { .sendOutcome }
        guard calls.isEmpty else { return (end, .nothing, call.resources) }
        switch phase {
        case .serving: return (end, .armIdleTimer, call.resources)
        case .draining:
            phase = .closed
            return (end, .close, call.resources)
        case .closed: return (end, .nothing, call.resources)
        }
    }

    // MARK: Replies

    /// A reply frame (a unary call's END with its response, or a stream's MESSAGE) that waits for room in
    /// the budget, kept here with what the handler needs to write it (`reply`, its encoded frame).
    struct WaitingReply {
        /// Numbers the replies that waited, in order.
        let ticket: UInt64
        let bytes: Int
        let reply: Reply
    }

    enum ReplyAction: Equatable {
        /// Write it now: its bytes are counted until `replyWritten`.
        case write
        /// The machine keeps it (its stream's writer waits) until `replyWritten` hands it back.
        case wait(ticket: UInt64)
    }

    /// A handler produced `reply`, a frame of `bytes`. It is written if it fits in the budget and no
    /// reply waits before it (replies leave in the order they came); otherwise it waits, here.
    mutating func replyProduced(_ reply: Reply, bytes: Int, at now: NIODeadline) -> ReplyAction {
        stall.replyTaken(at: now)
        if waitingReplies.isEmpty, budget.admitReply(bytes) { return .write }
        lastTicket += 1
        waitingReplies.append(WaitingReply(ticket: lastTicket, bytes: bytes, reply: reply))
        return .wait(ticket: lastTicket)
    }

    /// A reply of `bytes` was written to the socket (or failed with the connection): the waiting replies
    /// that fit now, in order, to write (their bytes counted from now).
    mutating func replyWritten(bytes: Int, at now: NIODeadline) -> [WaitingReply] {
        budget.replyWritten(bytes)
        var admitted: [WaitingReply] = []
        while let first = waitingReplies.first, budget.admitReply(first.bytes) {
            admitted.append(waitingReplies.removeFirst())
        }
        stall.replyWritten(at: now, outstanding: budget.heldByReplies > 0 || !waitingReplies.isEmpty)
        return admitted
    }

    /// The connection closes gracefully (drained, idle): every waiting reply, to write before it does.
    mutating func releaseWaitingReplies() -> [WaitingReply] {
        defer { waitingReplies.removeAll() }
        for reply in waitingReplies { budget.forceReply(reply.bytes) }
        return waitingReplies
    }

    /// When to check next whether the replies move; nil while none is outstanding.
    var nextStallCheck: NIODeadline? { phase == .closed ? nil : stall.nextCheck }

    enum StallAction: Equatable {
        case nothing
        case checkAgain(at: NIODeadline)
        /// The peer took nothing for the stall timeout: close without a word (it would not read it).
        case close
    }

    /// The stall check's timer fired; `queuedBytes` is what the socket holds now.
    mutating func stallCheck(at now: NIODeadline, queuedBytes: Int) -> StallAction {
        guard phase != .closed else { return .nothing }
        switch stall.check(at: now, queuedBytes: queuedBytes) {
        case .idle: return .nothing
        case .moving(let next): return .checkAgain(at: next)
        case .stalled:
            phase = .closed
            return .close
        }
    }

    // MARK: Shutdown

    struct DrainAction {
        /// For the GOAWAY: calls up to this id are (or were) served.
        var lastCallID: UInt64
        /// Open streams to end at once with UNAVAILABLE (their clients reconnect elsewhere), by id.
        var streamsToEnd: [CallResources]
        /// No call left: close after the GOAWAY.
        var closeNow: Bool
    }

    /// Graceful shutdown begins; nil when it already had.
    mutating func beginDraining() -> DrainAction? {
        guard phase == .serving else { return nil }
        phase = .draining
        var streams: [UInt64] = []
        for (id, call) in calls where call.isStream && !call.ended {
            calls[id]!.ended = true
            streams.append(id)
        }
        if calls.isEmpty { phase = .closed }
        return DrainAction(
            lastCallID: highestCallID, streamsToEnd: resources(of: streams), closeNow: phase == .closed)
    }

    /// The resources of calls `ids`, in the order of their ids.
    private func resources(of ids: [UInt64]) -> [CallResources] {
        ids.sorted().compactMap { calls[$0]?.resources }
    }

    /// The grace period is over: the calls still going for their clients (held ones too), to end now
    /// with UNAVAILABLE (their handlers cancelled); then the connection closes.
    mutating func gracePeriodEnded() -> [CallResources] {
        guard phase == .draining else { return [] }
        phase = .closed
        var ending: [UInt64] = []
        for (id, call) in calls where !call.ended {
            calls[id]!.ended = true
            ending.append(id)
        }
        return resources(of: ending)
    }

    /// The idle timer fired: true to say GOAWAY and close (no call came meanwhile).
    mutating func idleTimerFired() -> Bool {
        guard phase == .serving, calls.isEmpty else { return false }
        phase = .closed
        return true
    }

    /// The peer broke the protocol (a malformed frame, a server's frame kind): GOAWAY and close.
    mutating func protocolViolated() {
        phase = .closed
    }

    /// The connection is gone: every call's resources (handlers still running, to cancel; held calls'
    /// timers), in the order of their ids. Their returns find nothing; the waiting replies are dropped.
    mutating func connectionClosed() -> [CallResources] {
        phase = .closed
        waitingReplies.removeAll()
        heldCalls.removeAll()
        startedWithShare = 0
        defer { calls.removeAll() }
        return resources(of: Array(calls.keys))
    }
}

extension ServerConnectionStateMachine.DrainAction: Equatable where CallResources: Equatable {}
extension ServerConnectionStateMachine.WaitingReply: Equatable where Reply: Equatable {}
