/// Who may call a method.
public enum AccessPolicy: Sendable, Hashable {
    /// Anyone, signed in or not (sign-up, health).
    case anyone
    /// A signed-in user (a valid access token), or another Yedi service.
    case authenticated
    /// Internal methods: only Yedi services, proven by their service certificate (mutual TLS);
    /// `nil` allows every service, otherwise only those named.
    case servicesOnly(Set<String>?)
}

/// Checks an access token and says whose it is; throws `RPCError` `UNAUTHENTICATED` for a bad one.
/// AccountService provides the real one; tests provide fakes.
public protocol AccessTokenVerifier: Sendable {
    func verify(accessToken: String) async throws -> Caller
}

/// Establishes who the call acts for and enforces each method's `AccessPolicy`.
///
/// A client certificate naming a Yedi service (`spiffe://yedi/service/<name>`, verified by TLS against
/// the CA) makes the caller that service; otherwise `authorization: Bearer <token>` is verified.
/// Methods the policy does not mention need an authenticated caller: secure by default.
public struct AuthenticationInterceptor: ServerInterceptor {
    private let policy: @Sendable (MethodDescriptor) -> AccessPolicy
    private let verifier: (any AccessTokenVerifier)?

    public init(
        verifier: (any AccessTokenVerifier)?,
        policy: @escaping @Sendable (MethodDescriptor) -> AccessPolicy
    ) {
        self.verifier = verifier
        self.policy = policy
    }

    public func intercept(
        context: ServerContext,
        next: @Sendable (ServerContext) async throws -> Void
    ) async throws {
        var context = context
        // Health is for load balancers and operators: always open.
        let policy = context.method.service == "yedi.health.Health" ? .anyone : self.policy(context.method)
        context.caller = try await caller(of: context)
        switch (policy, context.caller) {
        case (.anyone, _), (.authenticated, .user), (.authenticated, .service):
            break
        case (.authenticated, .anonymous):
            throw RPCError(code: .unauthenticated, message: "sign-in required: send an access token")
        case (.servicesOnly(let allowed), .service(let name)):
            guard allowed?.contains(name) ?? true else {
                throw RPCError(code: .permissionDenied, message: "service \(name) may not call \(context.method.path)")
            }
        case (.servicesOnly, _):
            throw RPCError(
                code: .permissionDenied,
                message: "\(context.method.path) is internal: it requires a Yedi service certificate"
            )
        }
        try await next(context)
    }

    private func caller(of context: ServerContext) async throws -> Caller {
        if let service = context.peer.serviceName { return .service(name: service) }
        guard let authorization = context.metadata["authorization"] else { return .anonymous }
        guard authorization.hasPrefix("Bearer "), authorization.count > 7 else {
            throw RPCError(code: .unauthenticated, message: "the authorization metadata must be \"Bearer <token>\"")
        }
        guard let verifier else {
            throw RPCError(code: .unauthenticated, message: "this server does not accept access tokens")
        }
        return try await verifier.verify(accessToken: String(authorization.dropFirst(7)))
    }
}
