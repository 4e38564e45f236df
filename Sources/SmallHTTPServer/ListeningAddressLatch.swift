import NIOCore
import YediSync

/// Hands the listener's address from `run()`, which binds it, to callers who may ask before the bind has
/// happened (a test that bound port 0, say): they wait until it is known, or until the bind failed.
public final class ListeningAddressLatch: Sendable {
    private typealias Waiter = CheckedContinuation<SocketAddress, any Error>

    private struct State {
        var result: Result<SocketAddress, any Error>?
        var waiters: [Int: Waiter] = [:]
        var nextWaiterID = 0
    }

    private let state = TSanVisibleMutex(State())

    public init() {}

    /// Settles the latch once and for all and wakes every waiter.
    public func resolve(_ result: Result<SocketAddress, any Error>) {
        let waiters = state.withLock { state in
            precondition(state.result == nil, "the listening address is settled only once")
            state.result = result
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters {
            waiter.resume(with: result)
        }
    }

    /// The address once `resolve` has been called; throws its error, or `CancellationError` if the waiting task
    /// is cancelled first.
    public func wait() async throws -> SocketAddress {
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: Waiter) in
                let settled = state.withLock { state -> Result<SocketAddress, any Error>? in
                    if let result = state.result { return result }
                    // Checked under the lock, so a cancellation either sees this waiter or is seen here.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[id] = waiter
                    return nil
                }
                if let settled {
                    waiter.resume(with: settled)
                }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(throwing: CancellationError())
        }
    }
}
