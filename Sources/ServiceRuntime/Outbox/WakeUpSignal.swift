import RPCCore
import YediSync

/// Wakes the outbox worker when a job was committed, so delivery starts at once instead of at the next poll
/// (and ChatService's presence writer when a user's first stream opens or last one closes).
///
/// Signals coalesce (one pending wake-up at most): the worker reads every due job when it wakes. A wait
/// that times out or is cancelled leaves the signal as it was, so the next wait still blocks until a
/// signal or its own timeout. (The first version iterated an `AsyncStream` in a child task; cancelling
/// that child terminated the stream, every later wait returned at once, and idle services spun.)
public final class WakeUpSignal: Sendable {
    private enum Wait {
        /// Registered, its continuation not parked yet.
        case starting
        case parked(CheckedContinuation<Void, Never>)
        /// Signalled, timed out or cancelled; the waiting task returns (at once, if it parks later).
        case ended
    }

    private struct State {
        /// A signal that arrived while nobody waited, kept for the next wait.
        var pending = false
        var waits: [UInt64: Wait] = [:]
        var nextID: UInt64 = 0
    }

    private let state = TSanVisibleMutex(State())

    public init() {}

    /// Wakes every current waiter or, when nobody waits, the next one.
    public func signal() {
        let parked = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            var parked: [CheckedContinuation<Void, Never>] = []
            var woke = false
            for (id, wait) in state.waits {
                switch wait {
                case .starting: woke = true
                case .parked(let continuation): parked.append(continuation)
                case .ended: continue
                }
                state.waits[id] = .ended
            }
            if !woke && parked.isEmpty { state.pending = true }
            return parked
        }
        for continuation in parked { continuation.resume() }
    }

    /// Returns at the next signal (or a pending one), or after `timeout`, or when the task is cancelled.
    public func wait(timeout: Duration) async {
        let id: UInt64? = state.withLock { state in
            if state.pending {
                state.pending = false
                return nil
            }
            defer { state.nextID &+= 1 }
            state.waits[state.nextID] = .starting
            return state.nextID
        }
        guard let id else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.park(id) }
            group.addTask {
                try? await Task.sleep(for: timeout)
                self.end(id)
            }
            await group.next()
            group.cancelAll()
            self.end(id)
        }
        state.withLock { _ = $0.waits.removeValue(forKey: id) }
    }

    private func park(_ id: UInt64) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let parked = state.withLock { state -> Bool in
                    guard case .starting = state.waits[id] else { return false }
                    state.waits[id] = .parked(continuation)
                    return true
                }
                if !parked { continuation.resume() }
            }
        } onCancel: {
            end(id)
        }
    }

    /// Ends one wait without consuming a signal; harmless when it has already ended.
    private func end(_ id: UInt64) {
        let parked = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let wait = state.waits[id] else { return nil }
            state.waits[id] = .ended
            if case .parked(let continuation) = wait { return continuation }
            return nil
        }
        parked?.resume()
    }
}
