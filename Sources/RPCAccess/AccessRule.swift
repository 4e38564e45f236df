import RPCCore

/// Who may call a method: its `(yedi.rpc.access)` option in proto/ (see proto/access.proto), generated
/// into its `MethodDescriptor` (as the core's opaque `policy`) and enforced by `AuthenticationInterceptor`
/// before the handler runs.
///
/// Declared per method in the proto, not in each service's code, so that a new RPC cannot ship without
/// a decision: the generator refuses a method without one.
public enum AccessRule: MethodPolicy {
    /// Anonymous callers and signed-in users (sign-up, public reads). Not services: a service
    /// certificate calls `service` methods only, so a compromised service cannot roam the public API.
    case anyone
    /// Any signed-in user, whatever the role.
    case user
    /// A signed-in user with the customer role.
    case customer
    /// A signed-in user with the designer role.
    case designer
    /// Internal: Yedi services proven by their certificate (mutual TLS), by short name (`account`);
    /// an empty set allows any Yedi service.
    case service(callers: Set<String>)

    public var description: String {
        switch self {
        case .anyone: "anyone"
        case .user: "user"
        case .customer: "customer"
        case .designer: "designer"
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
