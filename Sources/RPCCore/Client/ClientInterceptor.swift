/// A call as client interceptors see it: the method and the options it will be sent with.
public struct ClientCall: Sendable {
    public let method: MethodDescriptor
    public var options: CallOptions
    /// When the caller stops waiting (its timeout, or an inherited deadline).
    public let deadline: ContinuousClock.Instant?
}

/// Middleware around every call a client makes: may change the options (add metadata such as
/// `traceparent`), observe the outcome, or fail the call by throwing.
///
/// Interceptors run in the order the client lists them; the first is the outermost.
public protocol ClientInterceptor: Sendable {
    func intercept<Result: Sendable>(
        _ call: ClientCall,
        next: (ClientCall) async throws -> Result
    ) async throws -> Result
}

extension Array where Element == any ClientInterceptor {
    func run<Result: Sendable>(
        _ call: ClientCall,
        from index: Int = 0,
        _ body: (ClientCall) async throws -> Result
    ) async throws -> Result {
        guard index < count else { return try await body(call) }
        return try await self[index].intercept(call) { call in try await self.run(call, from: index + 1, body) }
    }
}
