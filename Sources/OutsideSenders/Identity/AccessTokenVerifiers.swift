import AsyncHTTPClient
import Foundation

/// Kakao Login: an access token is checked at Kakao's token-information endpoint
/// (`GET /v1/user/access_token_info`, `Authorization: Bearer`), which answers the user's `id` and the
/// `app_id` the token was issued to; the app's configured Kakao app ids are the audiences.
/// ([API](https://developers.kakao.com/docs/latest/en/kakaologin/rest-api#get-token-info))
public struct KakaoTokenVerifier: ProviderTokenVerifier {
    public let provider = "kakao"
    let client: ProviderClient

    public init(
        url: String = "https://kapi.kakao.com", settings: ProviderHTTPSettings = ProviderHTTPSettings(),
        http: HTTPClient = .shared
    ) {
        client = ProviderClient(provider: provider, baseURL: url, settings: settings, http: http)
    }

    public func account(fromToken token: String, audiences: Set<String>) async throws(IdentityProviderError)
        -> ProviderAccount
    {
        try checkShape(token, provider: provider)
        let json = try await client.providerJSON(
            path: "/v1/user/access_token_info", headers: [("authorization", "Bearer \(token)")])
        guard let id = (json["id"] as? NSNumber)?.int64Value, let appID = (json["app_id"] as? NSNumber)?.int64Value
        else { throw IdentityProviderError(.unavailable, provider: provider, reason: "an answer without id") }
        guard audiences.contains(String(appID)) else {
            throw IdentityProviderError(.invalid, provider: provider, reason: "issued to another app")
        }
        return ProviderAccount(subject: String(id))
    }
}

/// Naver Login: an access token is checked by reading the member's profile (`GET /v1/nid/me`,
/// `Authorization: Bearer`), which answers `resultcode` "00" and the member's `id`. Naver names no
/// client in the answer: a token of any Naver app proves its member, so the app's Naver client ids are
/// not compared (docs/platform.md, "Verified identities").
/// ([API](https://developers.naver.com/docs/login/profile/profile.md))
public struct NaverTokenVerifier: ProviderTokenVerifier {
    public let provider = "naver"
    let client: ProviderClient

    public init(
        url: String = "https://openapi.naver.com", settings: ProviderHTTPSettings = ProviderHTTPSettings(),
        http: HTTPClient = .shared
    ) {
        client = ProviderClient(provider: provider, baseURL: url, settings: settings, http: http)
    }

    public func account(fromToken token: String, audiences: Set<String>) async throws(IdentityProviderError)
        -> ProviderAccount
    {
        try checkShape(token, provider: provider)
        let json = try await client.providerJSON(path: "/v1/nid/me", headers: [("authorization", "Bearer \(token)")])
        guard json["resultcode"] as? String == "00", let profile = json["response"] as? [String: Any],
            let id = profile["id"] as? String, !id.isEmpty, id.utf8.count <= 255
        else { throw IdentityProviderError(.invalid, provider: provider, reason: "the provider refused the token") }
        return ProviderAccount(
            subject: id, email: (profile["email"] as? String).flatMap { $0.utf8.count <= 254 ? $0 : nil })
    }
}

/// An access token goes into a header: printable ASCII without spaces, at most 2 KiB.
private func checkShape(_ token: String, provider: String) throws(IdentityProviderError) {
    guard !token.isEmpty, token.utf8.count <= 2_048, token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
        throw IdentityProviderError(.invalid, provider: provider, reason: "not an access token")
    }
}
