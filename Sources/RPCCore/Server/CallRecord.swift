import Logging
import YediSync

/// One call's shared record: what its `ServerContext` knows that never changes during the call (method,
/// the request's metadata, deadline, peer, logger, how logs name users), and what the connection and the
/// interceptors tell each other through it.
///
/// Every copy of the context (the task, the task-local, each interceptor's) holds one reference to it
/// instead of copying each of those values (a handful of retains per copy, per call). Through it, the
/// connection tells the interceptors the status it sent for a call it ended itself (deadline, shutdown,
/// the client's CANCEL) while the handler still ran (the handler sees only a cancellation, so logs and
/// metrics read this); authentication tells the logging interceptor outside it who the caller is; and
/// a call asks the connection to close once it is answered.
///
/// Not final: the connection's own view of a call (`ServerConnectionHandler.RunningCall`) extends it,
/// so that a call costs one object, not two. `@unchecked`: its own state is immutable or behind mutexes
/// (checked as for a final class when the subclass is set aside); what the subclass adds is confined to
/// the connection's event loop, and the tasks see the call only as this type.
class CallRecord: @unchecked Sendable {
    let method: MethodDescriptor
    /// The request's metadata, as it arrived.
    let metadata: Metadata
    let deadline: ContinuousClock.Instant?
    let peer: PeerInfo
    let userTag: LogUserTag
    let logger: Logger

    private let status = TSanVisibleMutex<RPCError?>(nil)
    private let authenticated = TSanVisibleMutex<(any CallerIdentity)?>(nil)
    private let closing = TSanVisibleMutex<RPCError?>(nil)

    init(
        method: MethodDescriptor, metadata: Metadata, deadline: ContinuousClock.Instant?, peer: PeerInfo,
        userTag: LogUserTag, logger: Logger
    ) {
        self.method = method
        self.metadata = metadata
        self.deadline = deadline
        self.peer = peer
        self.userTag = userTag
        self.logger = logger
    }

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
