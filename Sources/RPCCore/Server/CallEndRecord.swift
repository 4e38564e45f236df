/// The status a connection sent for a call it ended itself (deadline, shutdown, the client's CANCEL)
/// while the handler still ran. The handler then sees only a cancellation, so the interceptors that
/// log and count calls read this to record what the client received.
final class CallEndRecord: Sendable {
    private let status = TSanVisibleMutex<RPCError?>(nil)

    /// The status sent, if the connection ended the call before its handler returned.
    var sent: RPCError? { status.withLock { $0 } }

    /// Keeps the first status: the one the client received.
    func record(_ error: RPCError) {
        status.withLock { status in
            if status == nil { status = error }
        }
    }
}
