import DequeModule
import RPCCore
import YediSync

/// One open stream's mailbox: a bounded buffer between the hub (which never waits) and the call's writer
/// (which waits for the client's flow control).
///
/// Made by `StreamHub.subscribe(key:)`. When the buffer is full the subscription ends at once with
/// RESOURCE_EXHAUSTED naming the last position written, so one slow client costs at most `capacity` events
/// and the others never wait for it.
public final class StreamSubscription<Event: PositionedEvent>: Sendable {
    public let id: UInt64
    public let key: Event.Key
    public let capacity: Int
    private let state = TSanVisibleMutex(State())

    private struct State {
        var buffer = Deque<Event>()
        var waiter: CheckedContinuation<[Event], any Error>?
        var endWaiter: CheckedContinuation<RPCError, any Error>?
        var end: RPCError?
        /// The last position written to the client (for the cut-off message).
        var lastWritten: Int64 = 0
    }

    /// What `offer` does once the lock is released.
    private enum OfferOutcome {
        case done
        case deliver(CheckedContinuation<[Event], any Error>)
        case overflow(RPCError, CheckedContinuation<[Event], any Error>?, CheckedContinuation<RPCError, any Error>?)
    }

    /// What `take` does once the lock is released.
    private enum TakeOutcome {
        case events([Event])
        case failure(any Error)
        case wait
    }

    init(id: UInt64, key: Event.Key, capacity: Int) {
        self.id = id
        self.key = key
        self.capacity = capacity
    }

    /// Events waiting for the writer.
    public var bufferedCount: Int { state.withLock { $0.buffer.count } }

    /// Why it ended (nil while open).
    public var endReason: RPCError? { state.withLock { $0.end } }

    /// Records what the client has been sent, so a cut-off tells it where to resume.
    public func wrote(position: Int64) {
        state.withLock { $0.lastWritten = max($0.lastWritten, position) }
    }

    /// Buffers `event` (or hands it to a waiting writer). False when the buffer was full: the subscription
    /// has ended with RESOURCE_EXHAUSTED and dropped its buffer.
    func offer(_ event: Event) -> Bool {
        let outcome: OfferOutcome = state.withLock { state in
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
            state.buffer = Deque()
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

    /// Ends the subscription with `error` and drops its buffer (a no-op if it already ended).
    func end(_ error: RPCError) {
        let waiters = state.withLock {
            state -> (CheckedContinuation<[Event], any Error>?, CheckedContinuation<RPCError, any Error>?)? in
            guard state.end == nil else { return nil }
            state.end = error
            state.buffer = Deque()
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
    public func take() async throws -> [Event] {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Event], any Error>) in
                let outcome: TakeOutcome = state.withLock { state in
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

    /// Waits until the hub ends the subscription (overflow, `end(key:)`, shutdown) and returns why.
    public func ended() async throws -> RPCError {
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
