import Logging

/// Middleware around every call a server runs: sees (and may change) the context before the handler,
/// and the outcome after it (the response and its trailers, or the error), and may refuse or fail the
/// call by throwing an `RPCError`. The call is answered with what the outermost interceptor returns.
///
/// Interceptors run in the order the server lists them; the first is the outermost.
public protocol ServerInterceptor: Sendable {
    func intercept(
        context: ServerContext,
        next: @Sendable (ServerContext) async throws -> ServerResponse
    ) async throws -> ServerResponse

    /// A call to a routed method refused before it started (concurrency limit, metadata limits,
    /// shutdown), which never reaches `intercept`: for interceptors that log or count every call.
    /// Unknown methods are not reported (their paths are whatever a peer sent). Does nothing by default.
    func callRefused(_ method: MethodDescriptor, error: RPCError, logger: Logger)
}

extension ServerInterceptor {
    public func callRefused(_ method: MethodDescriptor, error: RPCError, logger: Logger) {}
}

extension Array where Element == any ServerInterceptor {
    /// Runs `handler` inside the interceptors, outermost first.
    @usableFromInline
    func run(
        context: ServerContext,
        from index: Int = 0,
        handler: @escaping @Sendable (ServerContext) async throws -> ServerResponse
    ) async throws -> ServerResponse {
        guard index < count else { return try await handler(context) }
        return try await self[index].intercept(context: context) { context in
            try await self.run(context: context, from: index + 1, handler: handler)
        }
    }
}
