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
    /// Who the call acts for; set by `AuthenticationInterceptor`.
    public var caller: Caller
    /// The trace this call belongs to; set by `TracingInterceptor`.
    public var trace: TraceContext?
    /// Carries method, request id and trace id; never tokens.
    public var logger: Logger

    public init(
        method: MethodDescriptor,
        metadata: Metadata,
        deadline: ContinuousClock.Instant?,
        peer: PeerInfo,
        caller: Caller = .anonymous,
        trace: TraceContext? = nil,
        logger: Logger
    ) {
        self.method = method
        self.metadata = metadata
        self.deadline = deadline
        self.peer = peer
        self.caller = caller
        self.trace = trace
        self.logger = logger
    }

    /// The context of the call the current task serves, so that outgoing calls made while serving it
    /// inherit its deadline and trace.
    @TaskLocal public static var current: ServerContext?
}
