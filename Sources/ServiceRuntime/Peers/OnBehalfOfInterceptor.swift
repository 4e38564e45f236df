import RPCAccess
import RPCCore

/// Tells the callee which user a service call is made for: while a handler serves a user's call, every
/// call it makes to a peer carries that user's access token in `yedi-on-behalf-of`.
///
/// The callee verifies the token itself (the same public key), so a service call is never an unscoped
/// master key: a peer learns the user from proof it can check, not from a claim. Calls with no user
/// behind them (outbox deliveries, background work) name users explicitly in their request messages
/// (`PurgeUserRequest.user_id`), and only methods marked SERVICE accept them.
public struct OnBehalfOfInterceptor: ClientInterceptor {
    public init() {}

    public func intercept<Result: Sendable>(
        _ call: ClientCall,
        next: (ClientCall) async throws -> Result
    ) async throws -> Result {
        guard let served = ServerContext.current, let token = Self.userToken(of: served) else {
            return try await next(call)
        }
        var call = call
        call.options.metadata[AuthenticationInterceptor.onBehalfOfMetadataKey] = token
        return try await next(call)
    }

    /// The access token of the user the served call acts for: theirs if they called, or the one a
    /// service passed along.
    static func userToken(of context: ServerContext) -> String? {
        switch context.caller {
        case .user:
            guard let authorization = context.metadata["authorization"], authorization.hasPrefix("Bearer ") else {
                return nil
            }
            return String(authorization.dropFirst(7))
        case .service:
            return context.onBehalfOf == nil ? nil : context.metadata[AuthenticationInterceptor.onBehalfOfMetadataKey]
        case .anonymous:
            return nil
        }
    }
}
