import RPCCore

/// The access tokens tests send, and the verifier that reads them: the one place to swap for the real
/// token issuer and verifier (signed JWTs) when they land.
///
/// A token is the name of its case; anything else is refused like a forged token.
public enum FakeAccessToken: String, CaseIterable, Sendable {
    /// A signed-in customer (`u-customer`).
    case customer
    /// A signed-in designer (`u-designer`).
    case designer
    /// Well-formed but past its expiry.
    case expired
    /// Its signature does not match its claims.
    case tampered

    /// What a client sends: `authorization: Bearer <token>`.
    public var authorization: String { "Bearer \(rawValue)" }

    /// The user a valid token proves.
    public var user: AuthenticatedUser? {
        switch self {
        case .customer: AuthenticatedUser(id: "u-customer", role: .customer)
        case .designer: AuthenticatedUser(id: "u-designer", role: .designer)
        case .expired, .tampered: nil
        }
    }
}

/// Verifies `FakeAccessToken`s as the real verifier would: `UNAUTHENTICATED` for anything not valid.
public struct FakeAccessTokenVerifier: AccessTokenVerifier {
    public init() {}

    public func verify(accessToken: String) async throws -> Caller {
        switch FakeAccessToken(rawValue: accessToken) {
        case .expired: throw RPCError(code: .unauthenticated, message: "access token expired")
        case let token?:
            guard let user = token.user else { break }
            return .user(user)
        case nil: break
        }
        throw RPCError(code: .unauthenticated, message: "invalid access token")
    }
}
