import Foundation
import RPCAccess
import RPCCore
import YediCrypto

/// Verifies access tokens offline against the token keys; every service uses it.
///
/// The order matters: size, shape, header (`alg` must be exactly `EdDSA`, so no algorithm confusion
/// with `none` or HMAC-with-the-public-key), `kid` lookup, the signature, and only then the claims.
/// Every failure is `UNAUTHENTICATED` with a short reason that never repeats the token.
public struct JWTVerifier: AccessTokenVerifier {
    /// Larger tokens are refused before any parsing; ours are a few hundred bytes.
    public static let maximumTokenSize = 4096

    private var keys: [String: TokenVerificationKey]
    /// The apps this service serves and each app's roles: a token of another app, or with a role its app
    /// does not have, is refused.
    private let apps: [AppID: Set<UserRole>]
    private let allowedClockSkew: TimeInterval
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - keys: every key whose tokens are accepted (several during a rotation).
    ///   - apps: the apps accepted (`aud` and `app`) and their roles; YeDi's alone by default.
    public init(
        keys: [TokenVerificationKey],
        apps: [AppID: Set<UserRole>] = JWTVerifier.yediOnly,
        allowedClockSkew: Duration = .seconds(30),
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.keys = Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
        self.apps = apps
        let (seconds, attoseconds) = allowedClockSkew.components
        self.allowedClockSkew = max(0, Double(seconds) + Double(attoseconds) / 1e18)
        self.now = now
    }

    /// The same verifier trusting `keys` instead.
    /// YeDi and its two roles: what a service serves when it is configured for no other app.
    public static let yediOnly: [AppID: Set<UserRole>] = [.yedi: [.customer, .designer]]

    public func withKeys(_ keys: [TokenVerificationKey]) -> JWTVerifier {
        var copy = self
        copy.keys = Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
        return copy
    }

    public func verify(accessToken: String) async throws -> Caller {
        .user(try claims(of: accessToken).authenticatedUser)
    }

    /// The token's claims, once its signature and validity period have been checked.
    public func claims(of token: String) throws(RPCError) -> AccessTokenClaims {
        guard token.utf8.count <= Self.maximumTokenSize else { throw Self.failure("access token too large") }
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else {
            throw Self.failure("access token malformed: expected three dot-separated parts")
        }
        guard let headerBytes = Base64URL.decode(String(decoding: parts[0], as: UTF8.self)),
            let payloadBytes = Base64URL.decode(String(decoding: parts[1], as: UTF8.self)),
            let signature = Base64URL.decode(String(decoding: parts[2], as: UTF8.self))
        else { throw Self.failure("access token malformed: a part is not base64url") }

        guard let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)) else {
            throw Self.failure("access token malformed: the header is not a JSON object with string fields")
        }
        guard header.alg == "EdDSA" else { throw Self.failure("access token algorithm not accepted (EdDSA only)") }
        guard header.crit == nil else { throw Self.failure("access token uses unsupported critical extensions") }
        guard let keyID = header.kid else { throw Self.failure("access token malformed: no key id (kid)") }
        guard let key = keys[keyID] else { throw Self.failure("unknown signing key") }

        let signingInput = Array(token.utf8.prefix(parts[0].count + 1 + parts[1].count))
        guard key.publicKey.isValidSignature(signature, for: signingInput) else {
            throw Self.failure("access token signature invalid")
        }

        // Signed by a key we trust: now the claims may be read.
        guard let payload = try? JSONDecoder().decode(Payload.self, from: Data(payloadBytes)) else {
            throw Self.failure("access token claims invalid: sub, role, iat and exp are required and well typed")
        }
        guard payload.iss == AccessTokenClaims.issuer else { throw Self.failure("access token issuer not accepted") }
        guard !payload.sub.isEmpty, !payload.role.isEmpty, payload.iat.isFinite, payload.exp.isFinite else {
            throw Self.failure("access token claims invalid: empty sub or role, or a non-finite time")
        }
        let now = now().timeIntervalSince1970
        guard !TokenExpiry.isExpired(at: payload.exp, now: now, allowedClockSkew: allowedClockSkew) else {
            throw Self.failure("access token expired")
        }
        guard payload.iat <= now + allowedClockSkew else { throw Self.failure("access token not yet valid") }
        guard payload.iat <= payload.exp else { throw Self.failure("access token claims invalid: exp before iat") }
        guard let appName = payload.app, let app = AppID(validating: appName), payload.aud == appName else {
            throw Self.failure("access token claims invalid: app is required, and aud must name the same app")
        }
        guard let roles = apps[app] else {
            throw Self.failure(
                "access token audience not accepted: it was issued for an app this service does not serve")
        }
        let role = UserRole(rawValue: payload.role)
        guard roles.contains(role) else {
            throw Self.failure("access token role not accepted: \(app) has no such role")
        }
        return AccessTokenClaims(
            userID: payload.sub,
            role: role,
            sessionID: payload.sid,
            app: app,
            issuedAt: Date(timeIntervalSince1970: payload.iat),
            expiresAt: Date(timeIntervalSince1970: payload.exp)
        )
    }

    /// Whether verified claims have expired since (a cached token is checked again on every use).
    public func hasExpired(_ claims: AccessTokenClaims) -> Bool {
        expiry.hasExpired(claims)
    }

    /// The clock and skew expiry is judged by, without the keys: what a cache checks on every hit,
    /// and what a key change (`withKeys`) keeps.
    public var expiry: TokenExpiry { TokenExpiry(allowedClockSkew: allowedClockSkew, now: now) }

    static let expired = failure("access token expired")

    private static func failure(_ message: String) -> RPCError {
        RPCError(code: .unauthenticated, message: message)
    }

    /// The JOSE header fields this verifier reads; others are ignored (RFC 7515 allows that, `crit` aside).
    private struct Header: Decodable {
        var alg: String?
        var kid: String?
        var crit: [String]?
    }

    /// The claims this verifier needs; unknown claims are ignored so the set can grow.
    private struct Payload: Decodable {
        var iss: String?
        var aud: String?
        var sub: String
        var role: String
        var sid: String?
        var app: String?
        var iat: Double
        var exp: Double
    }
}
