/// What the outer interceptors (logging, metrics) record of a call but cannot see in the context they
/// passed on: the status a connection sent for a call it ended itself (deadline, shutdown, the client's
/// CANCEL) while the handler still ran — the handler then sees only a cancellation — and the caller that
/// authentication, running inside them, established.
final class CallEndRecord: Sendable {
    private let status = TSanVisibleMutex<RPCError?>(nil)
    private let authenticated = TSanVisibleMutex<Caller?>(nil)

    /// The caller authentication established, once it has.
    var caller: Caller? { authenticated.withLock { $0 } }

    func record(caller: Caller) {
        authenticated.withLock { $0 = caller }
    }

    /// The status sent, if the connection ended the call before its handler returned.
    var sent: RPCError? { status.withLock { $0 } }

    /// Keeps the first status: the one the client received.
    func record(_ error: RPCError) {
        status.withLock { status in
            if status == nil { status = error }
        }
    }
}
