/// Server side of W3C trace propagation: continues the caller's trace (`traceparent`) or starts one,
/// gives the call its own span id, and puts the trace id in the call's logger.
///
/// Outgoing calls made while serving the call carry it on (`ClientTracingInterceptor`).
public struct ServerTracingInterceptor: ServerInterceptor {
    private let ids: TraceIDGenerator

    public init(ids: TraceIDGenerator = .system) {
        self.ids = ids
    }

    public func intercept(
        context: ServerContext,
        next: @Sendable (ServerContext) async throws -> ServerResponse
    ) async throws -> ServerResponse {
        var context = context
        let incoming = context.metadata["traceparent"].flatMap(TraceContext.init(traceparent:))
        let trace =
            incoming?.child(spanID: ids.spanID())
            ?? TraceContext(traceID: ids.traceID(), spanID: ids.spanID(), flags: 1)!
        context.trace = trace
        return try await next(context)
    }
}

/// Client side of W3C trace propagation: sends `traceparent` with every call, continuing the trace of
/// the call being served (if the caller is a handler) or starting a new one.
public struct ClientTracingInterceptor: ClientInterceptor {
    private let ids: TraceIDGenerator

    public init(ids: TraceIDGenerator = .system) {
        self.ids = ids
    }

    public func intercept<Result: Sendable>(
        _ call: ClientCall,
        next: (ClientCall) async throws -> Result
    ) async throws -> Result {
        var call = call
        let trace =
            ServerContext.current?.trace
            ?? TraceContext(traceID: ids.traceID(), spanID: ids.spanID(), flags: 1)!
        call.options.metadata["traceparent"] = trace.traceparent
        return try await next(call)
    }
}
