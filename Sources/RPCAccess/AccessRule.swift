import RPCCore

/// Who may call a method: its `(yedi.rpc.access)` option in proto/ (see proto/access.proto), with the
/// apps (`(yedi.rpc.apps)`) and roles (`(yedi.rpc.roles)`) it names, generated into its
/// `MethodDescriptor` (as the core's opaque `policy`) and enforced by `AuthenticationInterceptor` before
/// the handler runs.
///
/// Declared per method in the proto, not in each service's code, so that a new RPC cannot ship without
/// a decision: the generator refuses a method without one.
public enum AccessRule: MethodPolicy {
    /// Anonymous callers and signed-in users of `apps` (sign-up, public reads); an anonymous caller's app
    /// is its `yedi-app` metadata (YeDi without it). Not services: a service certificate calls `service`
    /// methods only, so a compromised service cannot roam the public API.
    case anyone(apps: AppScope)
    /// A signed-in user of one of `apps` with one of `roles` (any role of those apps when empty).
    case user(apps: AppScope, roles: Set<UserRole>)
    /// Internal: Yedi services proven by their certificate (mutual TLS), by short name (`account`);
    /// an empty set allows any Yedi service.
    case service(callers: Set<String>)

    /// YeDi's signed-in users, whatever their role (proto `USER` in a service that names no apps).
    public static let yediUser = AccessRule.user(apps: .only([.yedi]), roles: [])
    /// YeDi's customers (proto `CUSTOMER`).
    public static let customer = AccessRule.user(apps: .only([.yedi]), roles: [.customer])
    /// YeDi's designers (proto `DESIGNER`).
    public static let designer = AccessRule.user(apps: .only([.yedi]), roles: [.designer])

    public var description: String {
        switch self {
        case .anyone(let apps): "anyone (\(apps))"
        case .user(let apps, let roles):
            roles.isEmpty
                ? "user (\(apps))"
                : "\(roles.map(\.rawValue).sorted().joined(separator: " or ")) (\(apps))"
        case .service(let callers):
            callers.isEmpty ? "any service" : "services \(callers.sorted().joined(separator: ", "))"
        }
    }
}

extension MethodDescriptor {
    /// Who may call it, from the method's `(yedi.rpc.access)` option; nil for a method generated without
    /// one (RPCCore's own health service, which `AuthenticationInterceptor` leaves open).
    public var access: AccessRule? { policy as? AccessRule }
}

extension RPCMethod {
    /// A method with its access rule (what the generated bindings of YediProto call).
    public init(service: String, method: String, kind: RPCKind, idempotency: Idempotency, access: AccessRule) {
        self.init(service: service, method: method, kind: kind, idempotency: idempotency, policy: access)
    }
}
