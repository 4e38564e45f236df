import RPCCore

/// Checks an access token and says whose it is; throws `RPCError` `UNAUTHENTICATED` for a bad one.
/// AccountService provides the real one; tests provide fakes.
public protocol AccessTokenVerifier: Sendable {
    func verify(accessToken: String) async throws -> Caller
    /// The same, for the token as it sits in the `authorization` metadata (after `Bearer `): a verifier
    /// that can answer without a `String` of its own (a cache hit) saves a copy per call.
    func verify(bearerToken: Substring) async throws -> Caller
    /// The caller a token names when the verifier can say so at once (a cache hit), nil when it must be
    /// verified (`verify`); a token it knows to be bad (expired, revoked) throws. Synchronous, so that the
    /// common call of a signed-in user costs no async call of its own.
    func knownCaller(bearerToken: Substring) throws -> Caller?
    /// The same for a call on `peer`'s connection: a verifier may remember what the connection's last
    /// call carried (its next call most likely carries the same token).
    func knownCaller(bearerToken: Substring, on peer: PeerInfo) throws -> Caller?
    /// What `knownCaller` could not answer, verified in full: a verifier with a cache verifies and caches
    /// it without looking it up (and counting a miss) again.
    func verifyUnknown(bearerToken: Substring) async throws -> Caller
}

extension AccessTokenVerifier {
    public func verify(bearerToken: Substring) async throws -> Caller {
        try await verify(accessToken: String(bearerToken))
    }

    public func knownCaller(bearerToken: Substring) throws -> Caller? { nil }

    public func knownCaller(bearerToken: Substring, on peer: PeerInfo) throws -> Caller? {
        try knownCaller(bearerToken: bearerToken)
    }

    public func verifyUnknown(bearerToken: Substring) async throws -> Caller {
        try await verify(bearerToken: bearerToken)
    }
}

/// Establishes who the call acts for and enforces the method's `AccessRule` before the handler runs.
///
/// A client certificate naming a Yedi service (`spiffe://yedi/service/<name>`, verified by TLS against
/// the CA) makes the caller that service; otherwise `authorization: Bearer <token>` is verified. A bad
/// token fails the call (`UNAUTHENTICATED`) whatever the method, so a client learns early that its
/// session is gone. Health is always open (load balancers, operators).
///
/// A service acting for an end user names them with `yedi-on-behalf-of: <access token>`, verified like
/// any token, into `ServerContext.onBehalfOf`. The header from anyone else is refused
/// (`PERMISSION_DENIED`) rather than ignored, so that a client cannot believe it works.
///
/// Apps as tenants: the call's app (`ServerContext.app`) is the user's token's app; an anonymous caller
/// names its app with `yedi-app` metadata (YeDi without it). A method serves the apps its rule names, so a
/// user of one app cannot call another app's methods; `yedi-app` naming another app than the token's is
/// refused rather than ignored.
public struct AuthenticationInterceptor: ServerInterceptor {
    /// The request metadata key a service puts an end user's access token in when it calls for them.
    public static let onBehalfOfMetadataKey = "yedi-on-behalf-of"
    /// The request metadata key naming the app a call is made in (anonymous callers; optional otherwise).
    public static let appMetadataKey = "yedi-app"

    private let verifier: (any AccessTokenVerifier)?
    /// The apps this process serves (its configuration): a `yedi-app` naming another is refused.
    private let servedApps: Set<AppID>
    private let failureLimit: Int
    private let failurePeriod: Duration

    /// - Parameters:
    ///   - verifier: Checks access tokens; without one every token is refused.
    ///   - servedApps: The apps this process serves; the verifier must refuse other apps' tokens.
    ///   - failureLimit, failurePeriod: A connection with more failed authentications than
    ///     `failureLimit` within `failurePeriod` is closed after the one that passed the limit (a GOAWAY
    ///     saying why): a client flooding bad tokens loses its connection, the others are not affected.
    public init(
        verifier: (any AccessTokenVerifier)?, servedApps: Set<AppID> = [.yedi], failureLimit: Int = 20,
        failurePeriod: Duration = .seconds(10)
    ) {
        self.verifier = verifier
        self.servedApps = servedApps
        self.failureLimit = failureLimit
        self.failurePeriod = failurePeriod
    }

    // The checks and their refusals live in synchronous helpers: what an async function keeps across
    // its awaits is allocated per call in the task's frame, and this one runs on every call (a frame
    // larger than the task allocator's 1 KB slab costs a malloc of its own).
    public func intercept(
        context: ServerContext,
        next: @Sendable (ServerContext) async throws -> ServerResponse
    ) async throws -> ServerResponse {
        let caller: Caller
        do {
            if let known = try knownCaller(of: context) {
                caller = known
            } else {
                caller = try await verifyUnknown(Self.bearerToken(context.metadata["authorization"] ?? ""))
            }
        } catch let error as RPCError where error.code == .unauthenticated {
            countFailure(of: context)
            throw error
        }
        var onBehalfOf: AuthenticatedUser?
        if let token = context.metadata[Self.onBehalfOfMetadataKey] {
            onBehalfOf = try await user(onBehalfOf: token, calledBy: caller)
        }
        var context = context
        try admit(caller, onBehalfOf: onBehalfOf, to: &context)
        return try await next(context)
    }

    /// A failed authentication counts against the connection's budget; past it, the connection closes
    /// after this call.
    private func countFailure(of context: ServerContext) {
        let failures = context.peer.connectionState(AuthenticationFailures.self) { AuthenticationFailures() }
        if failures.record(at: .now, limit: failureLimit, period: failurePeriod) {
            context.closeConnectionAfterThisCall(
                RPCError(
                    code: .unauthenticated,
                    message: "too many failed authentications on this connection: closing it"))
        }
    }

    /// The user a Yedi service calls for (`yedi-on-behalf-of`).
    private func user(onBehalfOf token: String, calledBy caller: Caller) async throws -> AuthenticatedUser {
        guard case .service = caller else {
            throw RPCError(code: .permissionDenied, message: "\(Self.onBehalfOfMetadataKey) is for Yedi services only")
        }
        guard case .user(let user) = try await verify(token[...]) else {
            throw RPCError(code: .unauthenticated, message: "\(Self.onBehalfOfMetadataKey) must name a user")
        }
        return user
    }

    /// The call's app and whether the caller may make this call in it; then the identity is stored, once.
    private func admit(_ caller: Caller, onBehalfOf: AuthenticatedUser?, to context: inout ServerContext)
        throws(RPCError)
    {
        let app = try Self.app(of: context.metadata, user: caller.user ?? onBehalfOf)
        if context.method.service != Self.healthService {
            guard servedApps.contains(app) else {
                throw RPCError(code: .permissionDenied, message: "this service does not serve the app \(app)")
            }
            try Self.authorize(caller, app: app, for: context.method)
        }
        context.authenticate(caller: caller, onBehalfOf: onBehalfOf, app: app)
    }

    private static let healthService = "yedi.health.Health"

    /// The call's app: the token's (or, for a service, its on-behalf-of user's); `yedi-app` may repeat it
    /// but not contradict it, and names it for anyone else.
    private static func app(of metadata: Metadata, user: AuthenticatedUser?) throws(RPCError) -> AppID {
        var named: AppID?
        if let text = metadata[appMetadataKey] {
            guard let app = AppID(validating: text) else {
                throw RPCError(
                    code: .invalidArgument,
                    message: "\(appMetadataKey): an app name (1 to \(AppID.maximumBytes) bytes of a-z, 0-9, -)")
            }
            named = app
        }
        guard let user else { return named ?? .yedi }
        if let named, named != user.app {
            throw RPCError(
                code: .permissionDenied,
                message: "\(appMetadataKey) names \(named), but the access token is for \(user.app)")
        }
        return user.app
    }

    /// The caller when it is known without an async call: a service (its certificate), an anonymous
    /// caller, or a token the verifier has verified before; nil when the token must be verified.
    private func knownCaller(of context: ServerContext) throws -> Caller? {
        if let service = context.peer.serviceName { return .service(name: service) }
        guard let authorization = context.metadata["authorization"] else { return .anonymous }
        let token = try Self.bearerToken(authorization)
        guard let verifier else {
            throw RPCError(code: .unauthenticated, message: "this server does not accept access tokens")
        }
        return try verifier.knownCaller(bearerToken: token, on: context.peer)
    }

    /// The token of an `authorization` value, which must be `Bearer <token>`.
    private static func bearerToken(_ authorization: String) throws(RPCError) -> Substring {
        // UTF-8 offsets: `count` would walk the whole token by characters, and `dropFirst` its start.
        guard authorization.hasPrefix("Bearer "), authorization.utf8.count > 7 else {
            throw RPCError(code: .unauthenticated, message: "the authorization metadata must be \"Bearer <token>\"")
        }
        return authorization[authorization.utf8.index(authorization.startIndex, offsetBy: 7)...]
    }

    private func verify(_ token: Substring) async throws -> Caller {
        guard let verifier else {
            throw RPCError(code: .unauthenticated, message: "this server does not accept access tokens")
        }
        return try await verifier.verify(bearerToken: token)
    }

    /// The caller's token after `knownCaller` could not answer (a verifier is there: it said nil).
    private func verifyUnknown(_ token: Substring) async throws -> Caller {
        guard let verifier else {
            throw RPCError(code: .unauthenticated, message: "this server does not accept access tokens")
        }
        return try await verifier.verifyUnknown(bearerToken: token)
    }

    /// Whether `caller`, in `app`, may call `method`: `UNAUTHENTICATED` when signing in (or a
    /// certificate) would help, `PERMISSION_DENIED` when the caller is known and not allowed.
    private static func authorize(_ caller: Caller, app: AppID, for method: MethodDescriptor) throws(RPCError) {
        guard let access = method.access else {
            // Generated methods all declare one; a descriptor made without one is open to nobody.
            throw RPCError(code: .permissionDenied, message: "\(method.path) declares no access rule")
        }
        switch (access, caller) {
        case (.anyone(let apps), .anonymous), (.anyone(let apps), .user):
            try requireApp(apps, app, method)
        case (.user(let apps, let roles), .user(let user)):
            try requireApp(apps, app, method)
            guard roles.isEmpty || roles.contains(user.role) else {
                let needed = roles.map(\.rawValue).sorted().joined(separator: " or ")
                throw RPCError(code: .permissionDenied, message: "\(method.path) requires the \(needed) role")
            }
        case (.user, .anonymous):
            throw RPCError(code: .unauthenticated, message: "sign-in required: send an access token")
        case (.anyone, .service(let name)), (.user, .service(let name)):
            throw RPCError(
                code: .permissionDenied,
                message: "service \(name) may call internal methods only, not \(method.path)"
            )
        case (.service(let callers), .service(let name)):
            guard callers.isEmpty || callers.contains(name) else {
                throw RPCError(code: .permissionDenied, message: "service \(name) may not call \(method.path)")
            }
        case (.service, .user):
            throw RPCError(
                code: .permissionDenied,
                message: "\(method.path) is internal: requires a Yedi service certificate"
            )
        case (.service, .anonymous):
            throw RPCError(
                code: .unauthenticated,
                message: "\(method.path) is internal: requires a Yedi service certificate"
            )
        }
    }

    private static func requireApp(_ apps: AppScope, _ app: AppID, _ method: MethodDescriptor) throws(RPCError) {
        guard apps.contains(app) else {
            throw RPCError(code: .permissionDenied, message: "\(method.path) is not part of the app \(app)")
        }
    }
}
