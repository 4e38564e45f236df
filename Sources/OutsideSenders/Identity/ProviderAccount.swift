/// The account a sign-in provider vouched for: its stable id there, and the address it gave, if any.
public struct ProviderAccount: Sendable, Hashable {
    /// Apple's and Google's `sub`, Kakao's and Naver's `id`: never reused for another person.
    public var subject: String
    public var email: String?

    public init(subject: String, email: String? = nil) {
        self.subject = subject
        self.email = email
    }
}

/// Why a provider's token proved nothing: it is not good (`invalid`: a bad signature, another app's,
/// expired, refused by the provider), or the provider could not be asked (`unavailable`: 5xx, timeout,
/// no connection), which a client may retry. `reason` names no token.
public struct IdentityProviderError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        case invalid
        case unavailable
    }

    public var kind: Kind
    public var provider: String
    public var reason: String

    public init(_ kind: Kind, provider: String, reason: String) {
        self.kind = kind
        self.provider = provider
        self.reason = reason
    }

    public var description: String { "\(provider): \(reason)" }
}

/// A provider's check of the token an app's sign-in SDK gave it: the account it proves for a client of
/// `audiences` (the app's client ids at that provider), or `IdentityProviderError`.
public protocol ProviderTokenVerifier: Sendable {
    var provider: String { get }
    func account(fromToken token: String, audiences: Set<String>) async throws(IdentityProviderError) -> ProviderAccount
}

extension ProviderClient {
    /// GETs `path`, mapping no answer, 408, 429 and 5xx to `unavailable` and 401/403 to `invalid`; answers
    /// a 2xx body's JSON object.
    func providerJSON(path: String, headers: [(String, String)]) async throws(IdentityProviderError)
        -> [String: Any]
    {
        let response: ProviderResponse
        do {
            response = try await get(path: path, headers: headers)
        } catch {
            throw IdentityProviderError(.unavailable, provider: provider, reason: "no answer in time")
        }
        switch response.status {
        case 200..<300:
            guard let json = response.json else {
                throw IdentityProviderError(.unavailable, provider: provider, reason: "an answer that is not JSON")
            }
            return json
        case 400, 401, 403:
            throw IdentityProviderError(.invalid, provider: provider, reason: "the provider refused the token")
        case 404, 408, 429, 500...:
            throw IdentityProviderError(
                .unavailable, provider: provider, reason: "the provider answered \(response.status)")
        default:
            throw IdentityProviderError(
                .invalid, provider: provider, reason: "the provider answered \(response.status)")
        }
    }
}
