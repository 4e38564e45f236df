import YediSync

/// At most `permits` stream reads from the database at once, the others waiting their turn in order.
///
/// On PostgreSQL a live stream reads its events from the database whenever it is woken, and after the
/// listener reconnects every stream of the process is woken at once: thousands of reads would queue for
/// a pool of a few connections, each past the store's timeout, and the calls of everyone else behind
/// them. With this limit they take turns on part of the pool, the rest stays free for calls, and a
/// stream only waits longer (a stream has no deadline to miss). Writing to the client happens outside a
/// permit: a slow reader holds none.
public final class StreamReadLimit: Sendable {
    private struct State {
        var available: Int
        var waiting: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextID: UInt64 = 0
        var inUse = 0
        var mostInUse = 0

        /// Takes a free permit, when there is one and nobody waits for it.
        mutating func take() -> Bool {
            guard available > 0, waiting.isEmpty else { return false }
            available -= 1
            inUse += 1
            mostInUse = max(mostInUse, inUse)
            return true
        }
    }

    public let permits: Int
    private let state: TSanVisibleMutex<State>
    /// Runs between a read finding no free permit and its queueing (tests release a permit there).
    private let beforeQueueing: (@Sendable () async -> Void)?

    public convenience init(permits: Int) {
        self.init(permits: permits, beforeQueueing: nil)
    }

    init(permits: Int, beforeQueueing: (@Sendable () async -> Void)?) {
        precondition(permits >= 1, "a read limit needs at least one permit")
        self.permits = permits
        self.beforeQueueing = beforeQueueing
        state = TSanVisibleMutex(State(available: permits))
    }

    /// Runs `read` once a permit is free; a task cancelled while waiting throws `CancellationError`.
    public func run<Result: Sendable>(_ read: () async throws -> Result) async throws -> Result {
        try await acquire()
        defer { release() }
        return try await read()
    }

    /// The most reads that ran at once so far (for tests).
    public var mostInUse: Int { state.withLock { $0.mostInUse } }

    /// Reads waiting for a permit (for tests).
    public var waitingCount: Int { state.withLock { $0.waiting.count } }

    private func acquire() async throws {
        if state.withLock({ $0.take() }) { return }
        await beforeQueueing?()
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Outcome { case cancelled, acquired, waiting }
                // Decided under one lock with the queue: a permit released since the first look is taken
                // here, never left free while this task waits.
                let outcome = state.withLock { state -> Outcome in
                    if Task.isCancelled { return .cancelled }
                    if state.take() { return .acquired }
                    state.waiting.append((id, continuation))
                    return .waiting
                }
                switch outcome {
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .acquired: continuation.resume()
                case .waiting: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiting.remove(at: index).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Hands the permit to the first waiter, if any (it never becomes free in between, so no newcomer
    /// overtakes the queue).
    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard !state.waiting.isEmpty else {
                state.available += 1
                state.inUse -= 1
                return nil
            }
            return state.waiting.removeFirst().continuation
        }
        next?.resume()
    }
}
