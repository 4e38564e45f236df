import Logging

/// What a handler knows about the call it serves, beyond the request message.
///
/// Cancellation (the client gave up, the deadline passed, the server is stopping) cancels the handler's
/// task: check `Task.isCancelled` or let `Task.checkCancellation()` and cancellation-aware awaits throw.
///
/// Cheap to copy (a call's context is copied into its task, into the task-local and into the handler's
/// arguments): what the request brought lives in the call's shared `CallRecord` (one reference); only what
/// interceptors change (metadata, identity, trace) is held inline, and nothing until they change it.
public struct ServerContext: Sendable {
    /// The call's shared record: made by the connection that runs the call (or by `init` for a context
    /// made elsewhere).
    let record: CallRecord
    public var method: MethodDescriptor { record.method }
    /// Request metadata. Setting it (an interceptor adding an entry) replaces it for this copy of the
    /// context and the copies made from it, never for the call's other copies.
    public var metadata: Metadata {
        get { metadataOverride ?? record.metadata }
        set { metadataOverride = newValue }
    }
    /// Metadata set on this copy (by an interceptor), replacing the request's.
    private var metadataOverride: Metadata?
    /// When the caller stops waiting, if it said.
    public var deadline: ContinuousClock.Instant? { record.deadline }
    /// The connection's peer, with its verified client certificate identity (mutual TLS).
    public var peer: PeerInfo { record.peer }
    /// Who the call acts for, as authentication established it; nil until an interceptor sets it (Yedi:
    /// `AuthenticationInterceptor`, read through `caller` and `onBehalfOf` in RPCAccess).
    public var identity: (any CallerIdentity)? {
        didSet { record.identity = identity }
    }
    /// The trace this call belongs to; set by `TracingInterceptor`.
    public var trace: TraceContext?
    /// How logs name users (the caller, and handlers' own lines: `context.userTag(id)`).
    public var userTag: LogUserTag {
        get { userTagOverride ?? record.userTag }
        set { userTagOverride = newValue }
    }
    private var userTagOverride: LogUserTag?
    /// A logger set on this copy, replacing the connection's.
    private var loggerOverride: Logger?

    /// The status the client received when the connection ended the call before the handler returned
    /// (deadline, shutdown, cancellation): what logs and metrics record instead of the handler's outcome.
    /// `package`: the metrics interceptor (RPCObservability) reads it too.
    package var statusSentEarly: RPCError? { record.sent }

    /// Asks the connection to close after this call is answered: a GOAWAY saying `reason`, new calls
    /// refused, the calls in flight finished. For a peer that misbehaves at a level above the protocol
    /// (too many failed authentications); does nothing for a context not run by a connection.
    public func closeConnectionAfterThisCall(_ reason: RPCError) {
        record.requestClose(reason)
    }

    /// The caller as authentication established it, also when read from a context made before it ran.
    var authenticatedIdentity: (any CallerIdentity)? { record.identity ?? identity }

    /// Carries the method, request id, trace id and caller; never tokens. Built when asked for, so
    /// calls whose handlers do not log pay nothing for it.
    public var logger: Logger {
        get {
            var logger = loggerOverride ?? record.logger
            logger[metadataKey: "rpc.method"] = "\(method.path)"
            if let requestID = metadata["request-id"] { logger[metadataKey: "request-id"] = "\(requestID)" }
            if let trace { logger[metadataKey: "trace-id"] = "\(trace.traceID)" }
            if let caller = identity?.logName(userTag: userTag) { logger[metadataKey: "rpc.caller"] = "\(caller)" }
            return logger
        }
        set { loggerOverride = newValue }
    }

    public init(
        method: MethodDescriptor,
        metadata: Metadata,
        deadline: ContinuousClock.Instant?,
        peer: PeerInfo,
        identity: (any CallerIdentity)? = nil,
        trace: TraceContext? = nil,
        userTag: LogUserTag = .perProcess,
        logger: Logger
    ) {
        self.record = CallRecord(
            method: method, metadata: metadata, deadline: deadline, peer: peer, userTag: userTag, logger: logger)
        self.identity = identity
        self.trace = trace
        record.identity = identity
    }

    /// The context of a call a connection runs, around the record it made for the call.
    init(record: CallRecord) {
        self.record = record
    }

    /// The context of the call the current task serves, so that outgoing calls made while serving it
    /// inherit its deadline and trace.
    @TaskLocal public static var current: ServerContext?
}
