import AccessTokens
import Foundation
import RPCAccess
import RPCCore
import YediCrypto

/// The access tokens tests send: real EdDSA JWTs signed with the test PKI's token key (made by
/// `deploy/dev-pki.sh`), verified by the real `JWTVerifier` (`TestPKI.tokenVerifier()`).
public enum TestAccessToken: String, CaseIterable, Sendable {
    /// A signed-in customer (`u-customer`).
    case customer
    /// A signed-in designer (`u-designer`).
    case designer
    /// A customer's token, well-formed and signed, but expired an hour ago.
    case expired
    /// A customer's token whose claims were changed after signing (the role raised to designer).
    case tampered
    /// A member of SLP (`u-slp-member`), an app the test verifier serves beside YeDi.
    case slpMember
    /// A member of an app the test verifier does not serve (`zipadoo`).
    case unservedAppMember

    /// The apps and roles the tests' verifier serves.
    public static let servedApps: [AppID: Set<UserRole>] = [
        .yedi: [.customer, .designer], "slp": ["member", "admin"], "housetainer": ["member", "admin"],
    ]

    /// The instant every fixed token is issued at: a constant, so a token cannot expire while a slow run
    /// (the sanitizer passes take many minutes) is still using it.
    public static let issuedAt = Date(timeIntervalSince1970: 1_790_000_000)

    /// What `TestPKI.tokenVerifier()` takes for now: a minute after `issuedAt`, inside every token's life.
    public static let verifiedAt = issuedAt + 60

    /// The compact JWT.
    public var value: String { Self.tokens[self]! }

    /// What a client sends: `authorization: Bearer <token>`.
    public var authorization: String { "Bearer \(value)" }

    /// The user a valid token proves.
    public var user: AuthenticatedUser? {
        switch self {
        case .customer: AuthenticatedUser(id: "u-customer", role: .customer, sessionID: "s-customer")
        case .designer: AuthenticatedUser(id: "u-designer", role: .designer, sessionID: "s-designer")
        case .slpMember: AuthenticatedUser(id: "u-slp-member", role: "member", sessionID: "s-member", app: "slp")
        case .expired, .tampered, .unservedAppMember: nil
        }
    }

    private static let tokens: [TestAccessToken: String] = {
        let key = try! TestPKI.get().tokenSigningKey()
        func issue(_ id: String, _ role: UserRole, at now: Date, app: AppID = .yedi) -> String {
            signed(by: key, id, role, at: now, app: app)
        }
        let customer = issue("u-customer", .customer, at: issuedAt)
        // Same header and signature, claims edited: {"role":"customer"} → {"role":"designer"}.
        let parts = customer.split(separator: ".").map(String.init)
        let claims = String(decoding: Base64URL.decode(parts[1]) ?? [], as: UTF8.self)
            .replacingOccurrences(of: "\"customer\"", with: "\"designer\"")
        let tampered = [parts[0], Base64URL.encode(Array(claims.utf8)), parts[2]].joined(separator: ".")
        return [
            .customer: customer,
            .designer: issue("u-designer", .designer, at: issuedAt),
            .expired: issue("u-customer", .customer, at: issuedAt - 3_600),
            .tampered: tampered,
            .slpMember: issue("u-slp-member", "member", at: issuedAt, app: "slp"),
            .unservedAppMember: issue("u-zipadoo-member", "member", at: issuedAt, app: "zipadoo"),
        ]
    }()

    /// A token issued at `issuedAt` for `userID` of `app` with `role`, beyond the fixed cases (an app's
    /// access matrix).
    public static func issue(userID: String, role: UserRole, app: AppID) throws -> String {
        signed(by: try TestPKI.get().tokenSigningKey(), userID, role, at: issuedAt, app: app)
    }

    // A static function rather than nested in `tokens`' initializer: there, the compiler's module
    // emission wrongly warns that `try!` has nothing to throw.
    private static func signed(
        by key: TokenSigningKey, _ id: String, _ role: UserRole, at now: Date, app: AppID
    ) -> String {
        let issuer = AccessTokenIssuer(signingKey: key, now: { now })
        return try! issuer.issue(userID: id, role: role, sessionID: "s-\(role)", app: app).token
    }
}

extension TestPKI {
    /// The token signing key `deploy/dev-pki.sh` made in the test PKI.
    public func tokenSigningKey() throws -> TokenSigningKey {
        try TokenSigningKey.load(pemFile: devPKI.appendingPathComponent("token-signing.key").path)
    }

    /// A verifier of the test PKI's tokens, as every service builds it from `token-signing.pub.pem`.
    /// Serves YeDi, SLP and Housetainer (not Zipadoo: `TestAccessToken.unservedAppMember` is refused).
    /// Its clock reads `TestAccessToken.verifiedAt` unless told otherwise.
    public func tokenVerifier(
        now: @escaping @Sendable () -> Date = { TestAccessToken.verifiedAt }
    ) throws -> JWTVerifier {
        JWTVerifier(
            keys: [
                try TokenVerificationKey.load(pemFile: devPKI.appendingPathComponent("token-signing.pub.pem").path)
            ],
            apps: TestAccessToken.servedApps, now: now)
    }
}
