/// Who a call acts for, as established by authentication (`AuthenticationInterceptor`).
public enum Caller: Sendable, Hashable, CustomStringConvertible {
    /// Nobody has been authenticated (public methods only).
    case anonymous
    /// An end user, from a verified access token.
    case user(id: String, role: String)
    /// Another Yedi service, from its verified service certificate (mutual TLS).
    case service(name: String)

    public var description: String {
        switch self {
        case .anonymous: "anonymous"
        case .user(let id, let role): "user \(id) (\(role))"
        case .service(let name): "service \(name)"
        }
    }
}
