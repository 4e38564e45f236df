import Logging

/// What a handler knows about the call it serves, beyond the request message.
///
/// Cancellation (the client gave up, the deadline passed, the server is stopping) cancels the handler's
/// task: check `Task.isCancelled` or let `Task.checkCancellation()` and cancellation-aware awaits throw.
public struct ServerContext: Sendable {
    public let method: MethodDescriptor
    /// Request metadata.
    public var metadata: Metadata
    /// When the caller stops waiting, if it said.
    public let deadline: ContinuousClock.Instant?
    /// The connection's peer, with its verified client certificate identity (mutual TLS).
    public let peer: PeerInfo
    /// Who the call acts for, as authentication established it; nil until an interceptor sets it (Yedi:
    /// `AuthenticationInterceptor`, read through `caller` and `onBehalfOf` in RPCAccess).
    public var identity: (any CallerIdentity)? {
        didSet { endRecord?.identity = identity }
    }
    /// The trace this call belongs to; set by `TracingInterceptor`.
    public var trace: TraceContext?
    /// How logs name users (the caller, and handlers' own lines: `context.userTag(id)`).
    public var userTag: LogUserTag
    /// The connection's logger; `logger` adds this call's details to it.
    private var baseLogger: Logger
    /// Set by the connection that runs the call.
    var endRecord: CallEndRecord?

    /// The status the client received when the connection ended the call before the handler returned
    /// (deadline, shutdown, cancellation): what logs and metrics record instead of the handler's outcome.
    /// `package`: the metrics interceptor (RPCObservability) reads it too.
    package var statusSentEarly: RPCError? { endRecord?.sent }

    /// Asks the connection to close after this call is answered: a GOAWAY saying `reason`, new calls
    /// refused, the calls in flight finished. For a peer that misbehaves at a level above the protocol
    /// (too many failed authentications); does nothing for a context not run by a connection.
    public func closeConnectionAfterThisCall(_ reason: RPCError) {
        endRecord?.requestClose(reason)
    }

    /// The caller as authentication established it, also when read from a context made before it ran.
    var authenticatedIdentity: (any CallerIdentity)? { endRecord?.identity ?? identity }

    /// Carries the method, request id, trace id and caller; never tokens. Built when asked for, so
    /// calls whose handlers do not log pay nothing for it.
    public var logger: Logger {
        get {
            var logger = baseLogger
            logger[metadataKey: "rpc.method"] = "\(method.path)"
            if let requestID = metadata["request-id"] { logger[metadataKey: "request-id"] = "\(requestID)" }
            if let trace { logger[metadataKey: "trace-id"] = "\(trace.traceID)" }
            if let caller = identity?.logName(userTag: userTag) { logger[metadataKey: "rpc.caller"] = "\(caller)" }
            return logger
        }
        set { baseLogger = newValue }
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
        self.userTag = userTag
        self.method = method
        self.metadata = metadata
        self.deadline = deadline
        self.peer = peer
        self.identity = identity
        self.trace = trace
        self.baseLogger = logger
    }

    /// The context of the call the current task serves, so that outgoing calls made while serving it
    /// inherit its deadline and trace.
    @TaskLocal public static var current: ServerContext?
}
