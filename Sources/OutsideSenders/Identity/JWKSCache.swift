import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import YediCrypto

/// A provider's published signing keys (a JWKS, RFC 7517), fetched over HTTP and kept for `lifetime`:
/// one fetch an hour serves every sign-in. A token signed with a key not in the set (the provider
/// rotated its keys) fetches again at once, but at most once per `refetchInterval`, so tokens with
/// made-up key ids cannot turn each sign-in into a request to the provider.
public final class JWKSCache: Sendable {
    private struct State {
        var keys: [String: RSAPublicKey] = [:]
        var fetchedAt: Double?
    }

    private let client: ProviderClient
    private let path: String
    private let lifetime: Double
    private let refetchInterval: Double
    private let now: @Sendable () -> Double
    private let state = NIOLockedValueBox(State())

    /// - Parameters:
    ///   - url: the key set's base URL (`https://www.googleapis.com`), `path` below it (`/oauth2/v3/certs`).
    ///   - now: seconds since 1970 (the service's clock).
    public init(
        provider: String, url: String, path: String, lifetime: Duration = .seconds(3_600),
        refetchInterval: Duration = .seconds(60), settings: ProviderHTTPSettings = ProviderHTTPSettings(),
        http: HTTPClient = .shared, now: @escaping @Sendable () -> Double
    ) {
        client = ProviderClient(provider: provider, baseURL: url, settings: settings, http: http)
        self.path = path
        self.lifetime = Double(lifetime.components.seconds)
        self.refetchInterval = Double(refetchInterval.components.seconds)
        self.now = now
    }

    /// The key `kid`, from the cached set while it is fresh, else from a new fetch.
    public func key(id kid: String) async throws(IdentityProviderError) -> RSAPublicKey {
        let time = now()
        let (cached, age) = state.withLockedValue { ($0.keys[kid], $0.fetchedAt.map { time - $0 }) }
        if let cached, let age, age < lifetime { return cached }
        if cached == nil, let age, age < refetchInterval {
            throw IdentityProviderError(.invalid, provider: client.provider, reason: "signed with an unknown key")
        }
        let keys = try await fetch()
        state.withLockedValue { $0 = State(keys: keys, fetchedAt: time) }
        guard let key = keys[kid] else {
            throw IdentityProviderError(.invalid, provider: client.provider, reason: "signed with an unknown key")
        }
        return key
    }

    private func fetch() async throws(IdentityProviderError) -> [String: RSAPublicKey] {
        let json = try await client.providerJSON(path: path, headers: [("accept", "application/json")])
        guard let list = json["keys"] as? [[String: Any]] else {
            throw IdentityProviderError(.unavailable, provider: client.provider, reason: "a key set without keys")
        }
        var keys: [String: RSAPublicKey] = [:]
        for entry in list.prefix(32) {
            guard entry["kty"] as? String == "RSA", (entry["alg"] as? String ?? "RS256") == "RS256",
                (entry["use"] as? String ?? "sig") == "sig", let kid = entry["kid"] as? String,
                let n = (entry["n"] as? String).flatMap(Base64URL.decode),
                let e = (entry["e"] as? String).flatMap(Base64URL.decode),
                let key = try? RSAPublicKey(modulus: n, exponent: e)
            else { continue }
            keys[kid] = key
        }
        return keys
    }
}
