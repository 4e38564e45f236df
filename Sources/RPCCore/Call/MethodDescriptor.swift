/// How many messages flow each way in a call.
public enum RPCKind: Sendable, Hashable, CustomStringConvertible {
    /// One request, one response.
    case unary
    /// One request, any number of responses.
    case serverStreaming

    public var description: String {
        switch self {
        case .unary: "unary"
        case .serverStreaming: "server-streaming"
        }
    }
}

/// A method's `idempotency_level` option from proto/: decides whether a failed call may be retried.
public enum Idempotency: Sendable, Hashable {
    case unknown
    /// Repeating the call has the same effect as making it once.
    case idempotent
    /// The call reads only.
    case noSideEffects

    /// Whether the client may send the call again after an `UNAVAILABLE`.
    public var allowsRetry: Bool { self != .unknown }
}

/// One method of a service: what the router dispatches on and what a client names.
///
/// A class: every call's context carries one, and sharing it costs one reference count instead of six
/// string copies.
public final class MethodDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// `yedi.account.AccountService`
    public let service: String
    /// `SignIn`
    public let method: String
    public let kind: RPCKind
    public let idempotency: Idempotency
    /// What the application declares about it for its interceptors (Yedi: its access rule, RPCAccess);
    /// nil for a method that declares nothing the core's users act on (the health service).
    public let policy: (any MethodPolicy)?
    /// The full protobuf names of the request and response types.
    public let requestType: String
    public let responseType: String
    /// `/yedi.account.AccountService/SignIn`, as it travels in request frames.
    public let path: String

    public init(
        service: String,
        method: String,
        kind: RPCKind,
        idempotency: Idempotency,
        policy: (any MethodPolicy)? = nil,
        requestType: String,
        responseType: String
    ) {
        self.service = service
        self.method = method
        self.kind = kind
        self.idempotency = idempotency
        self.policy = policy
        self.requestType = requestType
        self.responseType = responseType
        self.path = "/\(service)/\(method)"
    }

    /// `yedi.account.AccountService/SignIn`
    public var fullName: String { "\(service)/\(method)" }

    public var description: String { path }

    public static func == (lhs: MethodDescriptor, rhs: MethodDescriptor) -> Bool {
        lhs === rhs
            || (lhs.path == rhs.path && lhs.kind == rhs.kind && lhs.idempotency == rhs.idempotency
                && Self.samePolicy(lhs.policy, rhs.policy))
    }

    private static func samePolicy(_ lhs: (any MethodPolicy)?, _ rhs: (any MethodPolicy)?) -> Bool {
        switch (lhs, rhs) {
        case (nil, nil): true
        case (let lhs?, let rhs?): AnyHashable(lhs) == AnyHashable(rhs)
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(path)
    }
}
