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
    }

    public let permits: Int
    private let state: TSanVisibleMutex<State>

    public init(permits: Int) {
        precondition(permits >= 1, "a read limit needs at least one permit")
        self.permits = permits
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

    private func acquire() async throws {
        let id = state.withLock { state -> UInt64? in
            guard state.available == 0 else {
                state.available -= 1
                state.inUse += 1
                state.mostInUse = max(state.mostInUse, state.inUse)
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = state.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    state.waiting.append((id, continuation))
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
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
