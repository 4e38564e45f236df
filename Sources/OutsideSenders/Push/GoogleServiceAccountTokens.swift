import AsyncHTTPClient
import Foundation
import ServiceRuntime
import YediCrypto

/// FCM's OAuth 2.0 access tokens, minted from a Google service-account key (the JSON file the Firebase
/// console hands out): a JWT signed with the key's RSA private key (RS256) is exchanged at the key's
/// `token_uri` for an access token (the JWT bearer grant, RFC 7523;
/// https://developers.google.com/identity/protocols/oauth2/service-account#httprest).
///
/// The token is kept until five minutes before it expires (Google's last an hour), by the injected
/// clock; concurrent sends while none is valid share one exchange. The key is read again at each
/// exchange, so rewriting its file rotates it without a restart. Neither key nor token is logged or put
/// in an error. A 4xx from the token endpoint is the credentials' fault (`.unauthorized`: the job waits
/// for an operator); 408, 429, 5xx and no answer are retried like a send.
public actor GoogleServiceAccountTokens {
    public static let provider = "google-oauth"
    public static let firebaseMessagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// A token is renewed this long before Google's expiry, so a send never presents one that lapses
    /// on the way.
    static let renewalMargin: TimeInterval = 300

    private let key: SecretSource
    private let scope: String
    private let clock: any WallClock
    private let settings: ProviderHTTPSettings
    private let http: HTTPClient
    private var current: (token: String, renewAt: Date)?
    private var exchange: Task<(String, Date), any Error>?

    public init(
        key: SecretSource, scope: String = firebaseMessagingScope, clock: any WallClock,
        settings: ProviderHTTPSettings = ProviderHTTPSettings(), http: HTTPClient = .shared
    ) {
        self.key = key
        self.scope = scope
        self.clock = clock
        self.settings = settings
        self.http = http
    }

    /// A valid access token: the kept one, or a new one.
    public func accessToken() async throws -> String {
        if let current, clock.now < current.renewAt { return current.token }
        if let exchange { return try await exchange.value.0 }
        let task = Task { try await self.mint() }
        exchange = task
        defer { exchange = nil }
        let (token, renewAt) = try await task.value
        current = (token, renewAt)
        return token
    }

    /// Forgets the kept token (FCM answered 401 with it: revoked, or the key rotated).
    public func discard() {
        current = nil
    }

    private func mint() async throws -> (String, Date) {
        let account = try ServiceAccountKey(json: try key.read().value)
        let issuedAt = clock.now
        let assertion = try account.assertion(scope: scope, issuedAt: issuedAt)
        let client = ProviderClient(provider: Self.provider, baseURL: account.tokenURI, settings: settings, http: http)
        let response = try await client.postForm(
            path: "",
            fields: [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)])
        guard response.isSuccess else {
            let code = (response.json?["error"] as? String) ?? ""
            if (400..<500).contains(response.status), ![408, 429].contains(response.status) {
                throw UndeliverableMessage(
                    reason: .unauthorized, provider: Self.provider, status: response.status, code: code)
            }
            throw response.failure(provider: Self.provider, code: code)
        }
        guard let token = response.json?["access_token"] as? String, !token.isEmpty,
            let lifetime = (response.json?["expires_in"] as? NSNumber)?.doubleValue, lifetime > 0
        else {
            throw RetryableSendError(provider: Self.provider, status: response.status, code: "no access token")
        }
        return (token, issuedAt + max(0, lifetime - Self.renewalMargin))
    }
}

/// The parts of a Google service-account key file the exchange needs.
struct ServiceAccountKey {
    var clientEmail: String
    var privateKey: RSAPrivateKey
    var privateKeyID: String?
    var tokenURI: String

    init(json text: String) throws {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
            object["type"] as? String == "service_account",
            let email = object["client_email"] as? String, !email.isEmpty,
            let pem = object["private_key"] as? String
        else {
            throw UndeliverableMessage(
                reason: .unauthorized, provider: GoogleServiceAccountTokens.provider, status: 0,
                code: "not a service-account key (type, client_email, private_key)")
        }
        do {
            privateKey = try RSAPrivateKey(pemRepresentation: pem)
        } catch {
            throw UndeliverableMessage(
                reason: .unauthorized, provider: GoogleServiceAccountTokens.provider, status: 0,
                code: "the service-account key's private_key is not an RSA key")
        }
        clientEmail = email
        privateKeyID = object["private_key_id"] as? String
        tokenURI = (object["token_uri"] as? String) ?? "https://oauth2.googleapis.com/token"
    }

    /// The signed JWT: issuer the account, audience the token endpoint, an hour's lifetime.
    func assertion(scope: String, issuedAt: Date) throws -> String {
        var header: [String: Any] = ["alg": "RS256", "typ": "JWT"]
        if let privateKeyID { header["kid"] = privateKeyID }
        let seconds = Int64(issuedAt.timeIntervalSince1970)
        let claims: [String: Any] = [
            "iss": clientEmail, "scope": scope, "aud": tokenURI, "iat": seconds, "exp": seconds + 3_600,
        ]
        let encode = { (object: [String: Any]) throws -> String in
            Base64URL.encode([UInt8](try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
        }
        let signingInput = "\(try encode(header)).\(try encode(claims))"
        let signature = try privateKey.signSHA256(Array(signingInput.utf8))
        return "\(signingInput).\(Base64URL.encode(signature))"
    }
}
