import NIOCore
import Synchronization
import YediSync

/// The connections of a client, over all its targets: picks a ready one round robin, skipping targets
/// ejected after an `UNAVAILABLE` answer (`TargetEjection`) and servers that say NOT_SERVING
/// (`ServerHealthWatch`) while another is ready, and lets calls wait while connections are being
/// (re)established.
final class ConnectionPool: Sendable {
    let connections: [ClientConnection]
    private let cursor = Atomic<Int>(0)
    /// Held by the connections too (they fire it), so it must not hold them: no reference cycle.
    private let waiters = PoolWaiters()
    private let ejection: TSanVisibleMutex<TargetEjection>
    /// Mirrors `!ejection.isEmpty`, so the calls of a healthy client never take the lock (entries of a
    /// target that stays away are forgotten after the longest backoff, so it does not stay set).
    private let anyFailures = Atomic<Bool>(false)

    init(
        ejection: TargetEjection,
        makeConnections: (_ onStateChange: @escaping @Sendable () -> Void) -> [ClientConnection]
    ) {
        let waiters = waiters
        self.ejection = TSanVisibleMutex(ejection)
        connections = makeConnections { waiters.stateChanged() }
    }

    /// A call on `connection` ended with `unavailable` (an `UNAVAILABLE` answer) or with another answer.
    /// Answers how long the target is now ejected, if it is.
    @discardableResult
    func record(_ connection: ClientConnection, unavailable: Bool) -> Duration? {
        guard unavailable || anyFailures.load(ordering: .relaxed) else { return nil }
        return ejection.withLock { ejection in
            defer { anyFailures.store(!ejection.isEmpty, ordering: .relaxed) }
            let now = ContinuousClock.now
            ejection.forgetStale(now: now)
            if unavailable {
                return ejection.recordUnavailable(connection.target, now: now, random: Double.random(in: 0..<1))
            }
            ejection.recordAnswer(connection.target)
            return nil
        }
    }

    /// A ready connection, of a target not in `avoiding` when one is ready (a retry goes elsewhere).
    /// Waits while connections are connecting; fails fast with `UNAVAILABLE` when every connection's last
    /// attempt failed (as gRPC does), at the deadline, and when cancelled.
    func readyConnection(deadline: ContinuousClock.Instant?, avoiding: Set<ClientConfiguration.Target> = [])
        async throws
        -> (ClientConnection, NIOLoopBound<ClientConnectionHandler>)
    {
        while true {
            try Task.checkCancellation()
            if let deadline, ContinuousClock.now >= deadline {
                throw RPCError(code: .deadlineExceeded, message: "the deadline passed while waiting for a connection")
            }
            let generation = waiters.generation
            if let ready = pickReady(avoiding: avoiding) { return ready }
            if waiters.isShutDown {
                throw UnsentCallError(error: RPCError(code: .unavailable, message: "the client is shut down"))
            }
            var failures: [RPCError] = []
            for connection in connections {
                if case .transientFailure(let error, _) = connection.currentState { failures.append(error) }
            }
            if failures.count == connections.count, let last = failures.last {
                throw UnsentCallError(error: last)
            }
            try await waiters.waitForChange(since: generation, deadline: deadline)
        }
    }

    /// Round robin over the ready connections of targets in the rotation and not in `avoiding`; failing
    /// that, of a target only avoided, then of any ready target (ejected or NOT_SERVING ones included).
    private func pickReady(avoiding: Set<ClientConfiguration.Target>) -> (
        ClientConnection, NIOLoopBound<ClientConnectionHandler>
    )? {
        let start = cursor.add(1, ordering: .relaxed).newValue
        // The common case (nothing failed, nothing to avoid) hashes no target and takes no lock: the first
        // ready connection whose server does not say NOT_SERVING, else the first ready one.
        guard !avoiding.isEmpty || anyFailures.load(ordering: .relaxed) else {
            var notServing: (ClientConnection, NIOLoopBound<ClientConnectionHandler>)?
            for offset in 0..<connections.count {
                let connection = connections[(start &+ offset) % connections.count]
                guard let handler = connection.readyHandler else { continue }
                if !connection.serverSaysNotServing { return (connection, handler) }
                if notServing == nil { notServing = (connection, handler) }
            }
            return notServing
        }
        let ejected = ejection.withLock { $0.ejectedTargets(now: .now) }
        var onlyAvoided: (ClientConnection, NIOLoopBound<ClientConnectionHandler>)?
        var onlyEjected: (ClientConnection, NIOLoopBound<ClientConnectionHandler>)?
        for offset in 0..<connections.count {
            let connection = connections[(start &+ offset) % connections.count]
            guard let handler = connection.readyHandler else { continue }
            if connection.serverSaysNotServing || ejected.contains(connection.target) {
                if onlyEjected == nil { onlyEjected = (connection, handler) }
            } else if avoiding.contains(connection.target) {
                if onlyAvoided == nil { onlyAvoided = (connection, handler) }
            } else {
                return (connection, handler)
            }
        }
        return onlyAvoided ?? onlyEjected
    }

    /// Calls waiting for a connection state change (for tests).
    var waitingCallCount: Int { waiters.waitingCount }

    func shutdown() {
        waiters.shutdown()
        for connection in connections { connection.shutdown() }
    }
}

/// Calls waiting for a connection state change.
private final class PoolWaiters: Sendable {
    private struct State {
        /// Bumped on every connection state change, so a waiter never misses one.
        var generation: UInt64 = 0
        var continuations: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextID: UInt64 = 0
        var shutDown = false
    }

    private let waiters = TSanVisibleMutex(State())

    var generation: UInt64 { waiters.withLock { $0.generation } }
    var isShutDown: Bool { waiters.withLock { $0.shutDown } }
    var waitingCount: Int { waiters.withLock { $0.continuations.count } }

    func shutdown() {
        let pending = waiters.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.shutDown = true
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in pending { continuation.resume() }
    }

    func stateChanged() {
        let woken = waiters.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.generation &+= 1
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in woken { continuation.resume() }
    }

    func waitForChange(since generation: UInt64, deadline: ContinuousClock.Instant?) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await self.nextChange(since: generation) }
            if let deadline {
                group.addTask {
                    try await Task.sleep(until: deadline, clock: .continuous)
                    throw RPCError(
                        code: .deadlineExceeded, message: "the deadline passed while waiting for a connection")
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    private func nextChange(since generation: UInt64) async {
        let id = waiters.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = waiters.withLock { state -> Bool in
                    // Cancelled before this: the cancellation handler already ran and found nothing.
                    if state.generation != generation || state.shutDown || Task.isCancelled { return true }
                    state.continuations[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = waiters.withLock { $0.continuations.removeValue(forKey: id) }
            continuation?.resume()
        }
    }
}
