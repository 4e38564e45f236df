import AsyncHTTPClient
import Foundation
import YediCrypto

/// Checks an OpenID Connect ID token (Sign in with Apple, Google Sign-In) locally: an RS256 JWT signed
/// with a key of the provider's published set (`JWKSCache`), from one of its issuers, for one of the
/// app's client ids (`aud`), not expired. Nothing is sent to the provider but the key-set fetch.
public struct IDTokenVerifier: ProviderTokenVerifier {
    public let provider: String
    let issuers: Set<String>
    let keys: JWKSCache
    let now: @Sendable () -> Double

    /// The most bytes of a token looked at; real ones are about 1 KiB.
    public static let maximumTokenBytes = 8_192
    /// Clock skew allowed on `exp`.
    public static let leeway: Double = 60

    public init(provider: String, issuers: Set<String>, keys: JWKSCache, now: @escaping @Sendable () -> Double) {
        self.provider = provider
        self.issuers = issuers
        self.keys = keys
        self.now = now
    }

    /// Apple: issuer `https://appleid.apple.com`, keys at `<url>/auth/keys`.
    public static func apple(
        url: String = "https://appleid.apple.com", http: HTTPClient = .shared, now: @escaping @Sendable () -> Double
    ) -> IDTokenVerifier {
        IDTokenVerifier(
            provider: "apple", issuers: ["https://appleid.apple.com"],
            keys: JWKSCache(provider: "apple", url: url, path: "/auth/keys", http: http, now: now), now: now)
    }

    /// Google: issuer `https://accounts.google.com` (or without the scheme), keys at
    /// `<url>/oauth2/v3/certs`.
    public static func google(
        url: String = "https://www.googleapis.com", http: HTTPClient = .shared, now: @escaping @Sendable () -> Double
    ) -> IDTokenVerifier {
        IDTokenVerifier(
            provider: "google", issuers: ["https://accounts.google.com", "accounts.google.com"],
            keys: JWKSCache(provider: "google", url: url, path: "/oauth2/v3/certs", http: http, now: now), now: now)
    }

    public func account(fromToken token: String, audiences: Set<String>) async throws(IdentityProviderError)
        -> ProviderAccount
    {
        func invalid(_ reason: String) -> IdentityProviderError {
            IdentityProviderError(.invalid, provider: provider, reason: reason)
        }
        guard token.utf8.count <= Self.maximumTokenBytes else { throw invalid("the token is too long") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(String(parts[0])),
            let payloadBytes = Base64URL.decode(String(parts[1])),
            let signature = Base64URL.decode(String(parts[2])),
            let header = (try? JSONSerialization.jsonObject(with: Data(headerBytes))) as? [String: Any],
            let claims = (try? JSONSerialization.jsonObject(with: Data(payloadBytes))) as? [String: Any]
        else { throw invalid("not a JWT") }
        guard header["alg"] as? String == "RS256", let kid = header["kid"] as? String, kid.utf8.count <= 128 else {
            throw invalid("not signed with RS256 and a key id")
        }
        // Signature first: nothing an unsigned token says is looked at.
        let key = try await keys.key(id: kid)
        guard key.isValidSHA256Signature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)) else {
            throw invalid("a bad signature")
        }
        guard let issuer = claims["iss"] as? String, issuers.contains(issuer) else { throw invalid("another issuer") }
        let audience: Set<String> =
            (claims["aud"] as? String).map { [$0] } ?? Set((claims["aud"] as? [String]) ?? [])
        guard !audience.isDisjoint(with: audiences) else { throw invalid("issued to another app") }
        guard let expiry = (claims["exp"] as? NSNumber)?.doubleValue, expiry + Self.leeway > now() else {
            throw invalid("expired")
        }
        guard let subject = claims["sub"] as? String, !subject.isEmpty, subject.utf8.count <= 255 else {
            throw invalid("no subject")
        }
        let verifiedEmail =
            (claims["email_verified"] as? Bool) ?? ((claims["email_verified"] as? String) == "true")
        let email = verifiedEmail ? (claims["email"] as? String).flatMap { $0.utf8.count <= 254 ? $0 : nil } : nil
        return ProviderAccount(subject: subject, email: email)
    }
}
