import NIOCore
import Synchronization
import YediSync

/// The server's open connections and running handlers, so that shutdown can drain the connections and
/// wait until they are closed and every handler has returned (a handler may outlive its connection).
@usableFromInline
final class ConnectionRegistry: Sendable {
    private struct State {
        var connections: [ObjectIdentifier: NIOLoopBound<ServerConnectionHandler>] = [:]
        var handlers = 0
        var emptyWaiters: [CheckedContinuation<Void, Never>] = []

        var isEmpty: Bool { connections.isEmpty && handlers == 0 }

        mutating func takeWaitersIfEmpty() -> [CheckedContinuation<Void, Never>] {
            guard isEmpty else { return [] }
            defer { emptyWaiters.removeAll() }
            return emptyWaiters
        }
    }

    private let state = TSanVisibleMutex(State())

    var count: Int { state.withLock { $0.connections.count } }

    func add(_ connection: NIOLoopBound<ServerConnectionHandler>, id: ObjectIdentifier) {
        state.withLock { $0.connections[id] = connection }
    }

    func remove(id: ObjectIdentifier) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.connections.removeValue(forKey: id) != nil else { return [] }
            return state.takeWaitersIfEmpty()
        }
        for waiter in waiters { waiter.resume() }
    }

    @usableFromInline
    func handlerStarted() {
        state.withLock { $0.handlers += 1 }
    }

    @usableFromInline
    func handlerFinished() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.handlers -= 1
            return state.takeWaitersIfEmpty()
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Sends GOAWAY on every connection; each closes once its calls are done or the grace period ends.
    func drainAll(gracePeriod: TimeAmount) {
        let connections = state.withLock { Array($0.connections.values) }
        for connection in connections {
            connection.eventLoop.execute { connection.value.beginDraining(gracePeriod: gracePeriod) }
        }
    }

    /// Returns once no connection is open and no handler runs.
    func waitUntilEmpty() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.isEmpty { return true }
                state.emptyWaiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
