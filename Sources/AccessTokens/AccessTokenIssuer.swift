import Foundation
import RPCAccess
import RPCCore
import YediCrypto

/// Mints access tokens: compact JWS (RFC 7515) JWTs signed with EdDSA/Ed25519 (RFC 8037).
///
/// Header `{"alg":"EdDSA","typ":"JWT","kid":…}`; claims `iss`, `aud` (the app the token is for, the
/// same as `app`), `sub`, `role`, `sid`, `app`, `iat`, `exp` (whole seconds). Short-lived by design: services verify offline, so a token cannot be revoked
/// before it expires; refresh goes through the account service.
public struct AccessTokenIssuer: Sendable {
    public let signingKey: TokenSigningKey
    public let lifetime: Duration
    private let now: @Sendable () -> Date

    public init(
        signingKey: TokenSigningKey,
        lifetime: Duration = .seconds(15 * 60),
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        precondition(lifetime > .zero, "an access token's lifetime must be positive")
        self.signingKey = signingKey
        self.lifetime = lifetime
        self.now = now
    }

    /// A signed token for the user and the claims it carries.
    public func issue(
        userID: String,
        role: UserRole,
        sessionID: String?,
        app: AppID = .yedi
    ) throws -> (token: String, claims: AccessTokenClaims) {
        guard !userID.isEmpty else { throw CryptoError("an access token needs a user id") }
        guard !role.rawValue.isEmpty else { throw CryptoError("an access token needs a role") }
        let issuedAt = now().timeIntervalSince1970.rounded(.down)
        // Whole seconds: NumericDate may be fractional, but integers are what every JWT library expects.
        let seconds = max(1, lifetime.components.seconds)
        let expiresAt = issuedAt + Double(seconds)

        let header = JSONText.object([
            ("alg", JSONText.string("EdDSA")),
            ("typ", JSONText.string("JWT")),
            ("kid", JSONText.string(signingKey.keyID)),
        ])
        var members: [(String, String)] = [
            ("iss", JSONText.string(AccessTokenClaims.issuer)),
            ("aud", JSONText.string(AccessTokenClaims.audience(app: app))),
            ("sub", JSONText.string(userID)),
            ("role", JSONText.string(role.rawValue)),
        ]
        if let sessionID { members.append(("sid", JSONText.string(sessionID))) }
        members.append(("app", JSONText.string(app.rawValue)))
        members.append(("iat", String(Int64(issuedAt))))
        members.append(("exp", String(Int64(expiresAt))))
        let payload = JSONText.object(members)

        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        let signature = try signingKey.privateKey.signature(for: Array(signingInput.utf8))
        let claims = AccessTokenClaims(
            userID: userID,
            role: role,
            sessionID: sessionID,
            app: app,
            issuedAt: Date(timeIntervalSince1970: issuedAt),
            expiresAt: Date(timeIntervalSince1970: expiresAt)
        )
        return (signingInput + "." + Base64URL.encode(signature), claims)
    }
}
