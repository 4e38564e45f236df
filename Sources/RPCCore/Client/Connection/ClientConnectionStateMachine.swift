/// The life of one client connection as a value: its calls' slots under the server's limits, the
/// server's SETTINGS and GOAWAY, and why it closed. Events go in as method calls and decisions come
/// back; `ClientConnectionHandler` keeps the calls' objects and timers and performs them.
///
/// It does no I/O, so its rules are tested without sockets or TLS (`ClientConnectionStateMachineTests`).
struct ClientConnectionStateMachine {
    /// A call sent whose END has not come.
    enum CallPhase: Equatable {
        /// Its caller waits for it.
        case running
        /// Its caller gave up (CANCEL sent); it keeps its slot until the server's END says its handler
        /// returned, as the server counts it until then.
        case abandoned
    }

    private(set) var calls: [UInt64: CallPhase] = [:]
    /// The lower of ours and the server's (SETTINGS).
    private(set) var maxConcurrentCalls: Int
    /// The largest request frame we send: ours until SETTINGS, then the server's announced limit, whatever
    /// ours is. The server is the one that refuses a larger frame, so a client default (4 MiB) must not
    /// stop a 10 MiB upload to a server that takes 11 MiB, nor let a frame through it would refuse.
    private(set) var maxSendFrameBytes: Int
    /// The largest frame we accept: the server's announced limit (its replies stay within it) if larger
    /// than ours, but never above `frameCeiling`, so a server cannot make us buffer whatever it announces.
    private(set) var maxReceiveFrameBytes: Int
    let frameCeiling: Int
    /// The server's SETTINGS came.
    private(set) var isReady = false
    /// No new call goes out: the server said GOAWAY, or the client is shutting down.
    private(set) var isGoingAway = false
    /// Why the connection failed or closed: the first cause wins.
    private(set) var closedError: RPCError?
    /// Wire ids are given out here, so the server sees them strictly increasing.
    private var lastCallID: UInt64 = 0

    init(maxConcurrentCalls: Int, maxFrameBytes: Int, frameCeiling: Int = 64 << 20) {
        self.maxConcurrentCalls = maxConcurrentCalls
        self.maxSendFrameBytes = maxFrameBytes
        self.maxReceiveFrameBytes = maxFrameBytes
        self.frameCeiling = max(frameCeiling, maxFrameBytes)
    }

    // MARK: Starting calls

    enum StartDecision: Equatable {
        /// Send it now (`nextCallID()`, then `callSent`).
        case send
        /// Wait for a free slot.
        case wait
        /// It cannot go out on this connection: it never reached a server, so it may go elsewhere.
        case failUnsent(RPCError)
    }

    func startDecision() -> StartDecision {
        if let closedError { return .failUnsent(closedError) }
        if isGoingAway { return .failUnsent(RPCError(code: .unavailable, message: "the connection is going away")) }
        return hasFreeSlot ? .send : .wait
    }

    var hasFreeSlot: Bool { calls.count < maxConcurrentCalls }

    mutating func nextCallID() -> UInt64 {
        lastCallID += 1
        return lastCallID
    }

    mutating func callSent(_ id: UInt64) {
        calls[id] = .running
    }

    /// The caller gave up: true when the call was running (then a CANCEL goes out and the slot stays
    /// taken until the server's END).
    mutating func callAbandoned(_ id: UInt64) -> Bool {
        guard calls[id] == .running else { return false }
        calls[id] = .abandoned
        return true
    }

    /// Calls whose callers wait: running ones plus `pending` not yet sent.
    func activeCalls(pending: Int) -> Int {
        calls.values.count { $0 == .running } + pending
    }

    // MARK: Frames from the server

    enum EndAction: Equatable {
        /// Resolve the call with the END's outcome.
        case resolve
        /// Its caller gave up earlier: only its slot is freed.
        case slotFreed
        /// Not a call of ours (any more): ignore.
        case unknown
    }

    mutating func endReceived(_ id: UInt64) -> EndAction {
        switch calls.removeValue(forKey: id) {
        case .running?: .resolve
        case .abandoned?: .slotFreed
        case nil: .unknown
        }
    }

    /// Applies the server's limits (0: not announced). True the first time: the connection is ready.
    mutating func settingsReceived(maxConcurrentCalls: UInt32, maxFrameBytes: UInt32) -> Bool {
        if maxConcurrentCalls > 0 { self.maxConcurrentCalls = min(self.maxConcurrentCalls, Int(maxConcurrentCalls)) }
        if maxFrameBytes > 0 {
            maxSendFrameBytes = Int(maxFrameBytes)
            maxReceiveFrameBytes = max(maxReceiveFrameBytes, min(Int(maxFrameBytes), frameCeiling))
        }
        defer { isReady = true }
        return !isReady
    }

    /// The server is going away: the running calls above `lastCallID`, which it never processed, to
    /// fail as unsent (they are forgotten here); nil when it had said so already.
    mutating func goawayReceived(lastCallID: UInt64) -> [UInt64]? {
        guard !isGoingAway else { return nil }
        isGoingAway = true
        let unseen = calls.keys.filter { $0 > lastCallID }.sorted()
        var unsent: [UInt64] = []
        for id in unseen where calls.removeValue(forKey: id) == .running { unsent.append(id) }
        return unsent
    }

    /// The client is shutting down: no new call goes out; close once none is active.
    mutating func closeWhenIdle() {
        isGoingAway = true
    }

    /// Whether to close now: going away, and nobody waits for a call.
    func shouldClose(pending: Int) -> Bool {
        isGoingAway && activeCalls(pending: pending) == 0
    }

    // MARK: Failure

    /// Records why the connection fails (the first cause is kept).
    mutating func failed(_ error: RPCError) {
        closedError = closedError ?? error
    }

    /// The connection is gone: the running calls to fail with `closedError` (set to `error` if none
    /// was recorded), which is returned with them.
    mutating func closed(_ error: RPCError) -> (error: RPCError, running: [UInt64]) {
        failed(error)
        defer { calls.removeAll() }
        return (closedError!, calls.filter { $0.value == .running }.keys.sorted())
    }
}
