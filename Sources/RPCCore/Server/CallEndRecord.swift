import YediSync

/// The status a connection sent for a call it ended itself (deadline, shutdown, the client's CANCEL)
/// while the handler still ran. The handler then sees only a cancellation, so the interceptors that
/// log and count calls read this to record what the client received. It also keeps the caller that
/// authentication established, for the request line of the logging interceptor outside it, and
/// whether the connection should close once this call is answered.
final class CallEndRecord: Sendable {
    private let status = TSanVisibleMutex<RPCError?>(nil)
    private let authenticated = TSanVisibleMutex<(any CallerIdentity)?>(nil)
    private let closing = TSanVisibleMutex<RPCError?>(nil)

    /// Why the connection should drain after this call, if something in the call asked it to.
    var closeReason: RPCError? { closing.withLock { $0 } }

    func requestClose(_ reason: RPCError) {
        closing.withLock { $0 = $0 ?? reason }
    }

    /// The caller authentication established (inner interceptors change their copy of the context;
    /// the logging interceptor, outside them, reads it here for the request line).
    var identity: (any CallerIdentity)? {
        get { authenticated.withLock { $0 } }
        set { authenticated.withLock { $0 = newValue } }
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
