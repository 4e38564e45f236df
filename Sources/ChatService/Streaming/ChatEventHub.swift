import DequeModule
import Metrics
import RPCCore
import ServiceLifecycle
import Synchronization
import YediSync

/// The in-memory fan-out of committed events to the open `Subscribe` streams of this process.
///
/// The store hands it each transaction's events after the commit (`publish`, on the writer queue, in
/// position order); it puts each event in the bounded buffer of every subscription of the recipient and
/// never waits. A subscription whose buffer is full (its client reads too slowly and flow control holds
/// the writer back) is ended with `RESOURCE_EXHAUSTED`, so memory stays at most `capacity` events per
/// stream; the client resumes from its last position and the rest comes from the database.
final class ChatEventHub: Sendable {
    /// Events buffered per subscription before it is cut off.
    let capacity: Int
    /// Open subscriptions per user (devices); one more is refused with RESOURCE_EXHAUSTED.
    let maxPerUser: Int
    private let state = TSanVisibleMutex(HubState())
    /// `yedi_chat_streams_open` and `yedi_chat_stream_cutoffs_total{reason}` for dashboards.
    private let openStreams = Gauge(label: "yedi_chat_streams_open")
    private let slowCutOffs = Counter(label: "yedi_chat_stream_cutoffs_total", dimensions: [("reason", "slow")])

    private struct HubState {
        var nextID: UInt64 = 0
        var byUser: [String: [UInt64: ChatSubscription]] = [:]
        var closed = false
    }

    init(capacity: Int = 1_024, maxPerUser: Int = 16) {
        precondition(capacity >= 1)
        self.capacity = capacity
        self.maxPerUser = maxPerUser
    }

    /// Registers a subscription for `userID`; events published from now on are buffered for it.
    func subscribe(userID: String) throws(RPCError) -> ChatSubscription {
        try state.withLock { state throws(RPCError) in
            if state.closed {
                throw RPCError(
                    code: .unavailable,
                    message: "the server is shutting down; subscribe again (elsewhere) from your last position")
            }
            if state.byUser[userID, default: [:]].count >= maxPerUser {
                throw RPCError(
                    code: .resourceExhausted, message: "too many open streams for this user (at most \(maxPerUser))")
            }
            state.nextID += 1
            let subscription = ChatSubscription(id: state.nextID, userID: userID, capacity: capacity)
            state.byUser[userID, default: [:]][subscription.id] = subscription
            openStreams.record(state.byUser.values.reduce(0) { $0 + $1.count })
            return subscription
        }
    }

    func unsubscribe(_ subscription: ChatSubscription) {
        state.withLock { state in
            state.byUser[subscription.userID]?[subscription.id] = nil
            if state.byUser[subscription.userID]?.isEmpty == true { state.byUser[subscription.userID] = nil }
            openStreams.record(state.byUser.values.reduce(0) { $0 + $1.count })
        }
    }

    /// Called with each committed transaction's events, in position order.
    func publish(_ events: [ChatEventRecord]) {
        var overflowed: [ChatSubscription] = []
        state.withLock { state in
            for event in events {
                guard let subscriptions = state.byUser[event.recipientID] else { continue }
                for subscription in subscriptions.values where !subscription.offer(event) {
                    overflowed.append(subscription)
                }
            }
            for subscription in overflowed {
                state.byUser[subscription.userID]?[subscription.id] = nil
                if state.byUser[subscription.userID]?.isEmpty == true { state.byUser[subscription.userID] = nil }
            }
            if !overflowed.isEmpty { openStreams.record(state.byUser.values.reduce(0) { $0 + $1.count }) }
        }
        if !overflowed.isEmpty { slowCutOffs.increment(by: overflowed.count) }
    }

    /// Ends `userID`'s open streams with `error` (their account was deleted).
    func end(userID: String, _ error: RPCError) {
        let subscriptions = state.withLock { state in
            let subscriptions = state.byUser[userID].map { Array($0.values) } ?? []
            state.byUser[userID] = nil
            openStreams.record(state.byUser.values.reduce(0) { $0 + $1.count })
            return subscriptions
        }
        for subscription in subscriptions { subscription.end(error) }
    }

    /// Ends every open stream with UNAVAILABLE and refuses new ones: the process is going away.
    func shutDown() {
        let all = state.withLock { state in
            state.closed = true
            let all = state.byUser.values.flatMap(\.values)
            state.byUser = [:]
            openStreams.record(0)
            return all
        }
        for subscription in all {
            subscription.end(
                RPCError(
                    code: .unavailable,
                    message:
                        "the server is shutting down; subscribe again (elsewhere) with after_position = your last position"
                ))
        }
    }

    /// Open subscriptions.
    var subscriptionCount: Int { state.withLock { $0.byUser.values.reduce(0) { $0 + $1.count } } }

    /// Events waiting in all buffers: what a slow subscriber makes the server hold.
    var bufferedEventCount: Int {
        let all = state.withLock { $0.byUser.values.flatMap(\.values) }
        return all.reduce(0) { $0 + $1.bufferedCount }
    }
}

/// One `Subscribe` stream's mailbox: a bounded buffer between the hub and the call's writer.
final class ChatSubscription: Sendable {
    let id: UInt64
    let userID: String
    let capacity: Int
    private let state = TSanVisibleMutex(State())

    private struct State {
        var buffer = Deque<ChatEventRecord>()
        var waiter: CheckedContinuation<[ChatEventRecord], any Error>?
        var endWaiter: CheckedContinuation<RPCError, any Error>?
        var end: RPCError?
        /// The last position written to the client (for the cut-off message).
        var lastWritten: Int64 = 0
    }

    init(id: UInt64, userID: String, capacity: Int) {
        self.id = id
        self.userID = userID
        self.capacity = capacity
    }

    var bufferedCount: Int { state.withLock { $0.buffer.count } }

    func wrote(position: Int64) {
        state.withLock { $0.lastWritten = max($0.lastWritten, position) }
    }

    /// Buffers `event` (or hands it to a waiting writer). False when the buffer was full: the
    /// subscription has ended with RESOURCE_EXHAUSTED.
    func offer(_ event: ChatEventRecord) -> Bool {
        enum Outcome {
            case done
            case deliver(CheckedContinuation<[ChatEventRecord], any Error>)
            case overflow(
                RPCError, CheckedContinuation<[ChatEventRecord], any Error>?, CheckedContinuation<RPCError, any Error>?)
        }
        let outcome: Outcome = state.withLock { state in
            if state.end != nil { return .done }
            if let waiter = state.waiter {
                state.waiter = nil
                return .deliver(waiter)
            }
            if state.buffer.count < capacity {
                state.buffer.append(event)
                return .done
            }
            let error = RPCError(
                code: .resourceExhausted,
                message:
                    "the stream fell \(state.buffer.count) events behind; subscribe again with after_position = \(state.lastWritten) (your last position)"
            )
            state.end = error
            state.buffer.removeAll()
            defer {
                state.waiter = nil
                state.endWaiter = nil
            }
            return .overflow(error, state.waiter, state.endWaiter)
        }
        switch outcome {
        case .done: return true
        case .deliver(let waiter):
            waiter.resume(returning: [event])
            return true
        case .overflow(let error, let waiter, let endWaiter):
            waiter?.resume(throwing: error)
            endWaiter?.resume(returning: error)
            return false
        }
    }

    /// Ends the subscription with `error` (a no-op if it already ended).
    func end(_ error: RPCError) {
        let waiters = state.withLock {
            state -> (CheckedContinuation<[ChatEventRecord], any Error>?, CheckedContinuation<RPCError, any Error>?)? in
            guard state.end == nil else { return nil }
            state.end = error
            state.buffer.removeAll()
            defer {
                state.waiter = nil
                state.endWaiter = nil
            }
            return (state.waiter, state.endWaiter)
        }
        waiters?.0?.resume(throwing: error)
        waiters?.1?.resume(returning: error)
    }

    /// The buffered events, waiting for one if there are none; throws the end reason once ended.
    func take() async throws -> [ChatEventRecord] {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<[ChatEventRecord], any Error>) in
                enum Outcome {
                    case events([ChatEventRecord])
                    case failure(any Error)
                    case wait
                }
                let outcome: Outcome = state.withLock { state in
                    if let end = state.end { return .failure(end) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if !state.buffer.isEmpty {
                        let events = Array(state.buffer)
                        state.buffer.removeAll(keepingCapacity: true)
                        return .events(events)
                    }
                    state.waiter = continuation
                    return .wait
                }
                switch outcome {
                case .events(let events): continuation.resume(returning: events)
                case .failure(let error): continuation.resume(throwing: error)
                case .wait: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Waits until the hub ends the subscription (overflow, shutdown) and returns why.
    func ended() async throws -> RPCError {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<RPCError, any Error>) in
                let outcome: Result<RPCError, any Error>? = state.withLock { state in
                    if let end = state.end { return .success(end) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.endWaiter = continuation
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.endWaiter = nil }
                return state.endWaiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}

/// Stops the hub when graceful shutdown begins. It is started after the RPC server, so it is told
/// first (services stop in reverse order): open streams end at once with UNAVAILABLE instead of holding
/// the server's drain until its grace period runs out.
struct ChatStreamShutdown: Service {
    let hub: ChatEventHub

    func run() async throws {
        try? await gracefulShutdown()
        hub.shutDown()
    }
}
