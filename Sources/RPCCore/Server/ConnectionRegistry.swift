import NIOCore
import Synchronization

/// The server's open connections, so that shutdown can drain them all and wait until they are closed.
final class ConnectionRegistry: Sendable {
    private struct State {
        var connections: [ObjectIdentifier: NIOLoopBound<ServerConnectionHandler>] = [:]
        var emptyWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = TSanVisibleMutex(State())

    var count: Int { state.withLock { $0.connections.count } }

    func add(_ connection: NIOLoopBound<ServerConnectionHandler>, id: ObjectIdentifier) {
        state.withLock { $0.connections[id] = connection }
    }

    func remove(id: ObjectIdentifier) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.connections.removeValue(forKey: id) != nil, state.connections.isEmpty else { return [] }
            defer { state.emptyWaiters.removeAll() }
            return state.emptyWaiters
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

    /// Returns once no connection is open.
    func waitUntilEmpty() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.connections.isEmpty { return true }
                state.emptyWaiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
