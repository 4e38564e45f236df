import Foundation
import HTTPTestSupport
import NIOConcurrencyHelpers
import OutsideSenders
import XCTest
import YediCrypto

/// The sign-in providers' token checks against a fake provider: Apple and Google ID tokens (a key set
/// fetched and cached, RS256, issuer, audience, expiry) and Kakao and Naver access tokens (their
/// token-information endpoints); a provider that fails or does not answer is `unavailable`.
final class IdentityProviderVerifierTests: XCTestCase {
    /// Two fixed 2048-bit test keys: `signing` is published in the fake key set, `other` is not.
    static let signing = try! RSAPrivateKey(pemRepresentation: signingPEM)
    /// `signing`'s PEM (a test fixture, not a real key), also the private key of the fake service account.
    static let signingPEM = """
        -----BEGIN PRIVATE KEY-----
        MIIEvwIBADANBgkqhkiG9w0BAQEFAASCBKkwggSlAgEAAoIBAQDceyGtMgCWMC2m
        dK9X3JFcTKaM1ox78YKl7Gcf3aq9li9Q3g3J6Rmx60/7eFrQazIpyTG3XYKkP5S7
        2glNTDO3ZCywSDS7cRNov9ftUz5iyjCxekEUGREZXQYDdjwg4T1rD7MsMCjmz3Si
        SJ5vHz584MVgEMiLRHauhJCUFL8xa+MyLw8NKuE3l5GwzkxDPNxrqkIzN5Lcdada
        VTyR8h/u7VBQYGmVGCo7Vdu5OxH2Dm2zN05Ffin4V8zpA5kqk0NNKEWkiCBO1gDY
        gmYF0SwuZTAQe+zORF03s/33aqbhQ8eSZ/syt4U8hjxpZs5ARVdje06EeWAVFMbF
        JCKFzKMDAgMBAAECggEAAZvlF14u6OHp0ihwSWD+ALDPLJTBwLHbsLfFjLP3hRXY
        t13rmA1D/ESZWzuDqLCGmoHLQbT06arvWzdnvSeIIUQpj6CtU+XCPnS0rBELtNJG
        we86qDLYJWsSI++w0CAwTWqDDP1s69XK2nNqNx23LZ1cTRJVrUpCWwl3IoOR4a0l
        VA0nYoc7a4w7Uky75k0bxKmKZj+fWDIqR0wK0VwMF1jQfTGhwgSNhZlmMwNJdXfy
        lljQr1IXEgPuIT0bUtGFvT7wRzJVwInHUfuuP38P8idCqH6WA0Qaks54Nkrgrj2w
        jfmPljiOyv6wUEpRzAttxHrAO0qBLXJFOm5PLlR3RQKBgQD85ZUk9PGU5j2XMuyO
        wAoqR2plkHqwxVdKUoOYkY6IympJV1wF6On/TRawNVzNKa4PcRra/zKIlDrjmng6
        K3KHEjyT0+vdrX+IavBpVJgMkZyuPTTxCAuQdfesXb07fH7jfzUsyIhzsBrk39zO
        6g+11NFIxUap50ApGDyM3TYcTwKBgQDfL7jZPcrx/XeNtVWV9tywqJK7V6pwdzIP
        hmDB6n+rjEKOtaMqSRO9T++3X/BpCTqiPi5jrcoDlQidYrWqSJVxfQ3E5h+FCCa0
        Lp43GtjchccPF1AvS/yYGrj5uS2h8c2CDC2VLxq6jdtEv7mwBKt56jHWVAAKFu5D
        rofpulPdDQKBgQD3l0VXMz+5CVjPSJn0f+rzzYtK+BJGMk3tg682lXq4TYOVXiPH
        3WoJ+sz1oqjCa8XvdEpYkXRF5ulon3iJarPrrV0FVXscQpoTUq8gUCO0WnLM2zuT
        ps67leLvK67yKEaKL6Y9u+5rZMRPwyOIp/rNiBeFaS5vdOmJ0iKlvoUVXQKBgQCt
        ZeFCfty+18NbyKee5HWflsixXrHfwOuW3jssTak1Obq4L2x+PNpmOcWvfY1FvdLd
        HFxkOzB5Sf+wb3FexBe/XX4mHPgeHjAbyyBHBce4xQLbuawlou6zqgdOlU1bxYZ5
        5EZB4p/skqvppN96XpZvGMHxl7+UFy60TNPxhj8DvQKBgQCBZyel/cArHUKenTAd
        ZBMpWuW9OSuX3OOkGqHRMv/7VxyJloRDw3TaEBpSovQHJcFSCgwg2y9ySE7t0VHv
        6UfuubaLr/Pe+zu3X7w9U1me2Y+GVkj31YjHOHx4GFXgS6RFE9+A2HEpnq4OY7Q9
        hL+pyCbUkhDz0901o52Gwvb5Ug==
        -----END PRIVATE KEY-----
        """
    static let other = try! RSAPrivateKey(
        pemRepresentation: """
            -----BEGIN PRIVATE KEY-----
            MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQDgww4ezH21kfzQ
            EnzmW3fQXGt1fSxjy7sdhkil8Cakoi3zQaKSXyVk5NBjPqPsaWNzvLtdOJPMtRPo
            os9Uds2/nKxzRBNiuzCRqHhkZEvU5evT4BKN6z6eBDW9Ko90CcPzx+I9kpo1hmDk
            D3+dwKaJnj5hJ+fZicSNpORKwcxEc3g08mbsUTR8UU89s3VOKRnPYdax2ih46C2P
            3NYAQfDw67RbbRYErPQo3fTmgWkypp/UQebyHvc8m5GtuJdePIVIJofrBOUNH338
            lzMTyDR+gdCVELY2rjGhGaJ77BQgYZC/QijZcIv7AV066wGpvyP3KItQ3mN2zWLd
            6bLtIQi9AgMBAAECggEAY3xjFSXdpM9kMHNmfo5RF9S4qe4IhnnIrpZgNLb6W9f/
            b9OHErPzuNeBF9TDuSKi5zlMU8R1w2AJWmkqTVAy3RQLzw98ZzDFHEwOUh2E5U0K
            GCPwAop0knv5j2w1yB6EcjTxAuEPyg5bd8cWbSy3amW1ZcrEmKke67VnaWGjuU3w
            rJLLmm0hQgqZqBInPLiZOJEonDi50PcYK/NbdtNkQkL2Dxi81/kYFAAFlKV6/kyq
            ZE19OLd06ICSMWFXmzBFXI2LK7RWxvLa4Vridv6F5eAXkQG4gBcqS5ga0PAaY6No
            VIzfAwftwfOkbgcRVZvGv0uX8tpMapESoHQKBMdN/wKBgQD0hMnqJisQRR0ud315
            Ka0yJlcU7gbOOWBsDXvmQjJ3br3D+rKDzm1+AELLJXlpPuL2REaLMxs/Z2WZjeJ8
            i7T110jRunsGUNKZEZtTJ8+kHJ0jwqhyDQX75YpVxoi01IE2Duf+A0V7FmHHDuYk
            KuDU5VtR5ouGMOSCmJLgE2EbgwKBgQDrUMhA7gOM3YnZELIPzAGJub6Qj+1eSK6/
            eYgF7meyiemhclB8gUUPgWFbz/ZtkciJVpXKj1KZaLZIcy8J8JxSGG+dCUImQnc2
            KvZ5ss1+mdXECQJquIcnByWSkR4+PqCf8qXzk0eYO/uh5Ptw+1kz4iyuoSNTfDJe
            c1IChTrWvwKBgAGvuMTIpptiHqVnZZIkW3FxGkCms51Qf/2+yg/4fOid9ukXHYwT
            LGYmEk/cXk3/hQk1x1bGb3WsfOLmO52oSQM5DOOFabvNauZrXKriJ2h2Wg8ZFJhU
            xqnKF34n9GFq5ck9qRPzadNDgEEjNSsisJJHUq3p7SRryeesrbal65GJAoGAGQTl
            xcGIrxl+5o1X4UYXg8Uz9brXygaATetmAvtuGxV+uaOl2xcDeLqQ12otEUlGwRNr
            qbXDWnw/pURZ4/ypIjFm7JNnbRn0AtZejmHsZ2GD0OwETcSA2i1wWT0EsimGensa
            GeO24QC/qF7oPQL8YP/TMF4Bm4bA9DneplX0A5ECgYB0FPVaB1d9aPaB1FHTSAna
            Hv9EWeeYijnpawu+pcm2D6PYlUB+PqmetSFCNTSr9cEyTmBhlznYKne+YrurvLHB
            EunUHPtwQHbD4UoF4UIifpR/SZznbpJGZ/cY04gKlmszEyeJp9Zictab7H/ThUde
            l+ys7rmAzN0HcB6+7TCWcQ==
            -----END PRIVATE KEY-----
            """)

    static let now: Double = 1_790_000_000
    static let audience = "housetainer-ios.apps.googleusercontent.com"

    static func jwks(kid: String = "k1") throws -> String {
        let (n, e) = try signing.publicComponents()
        return """
            {"keys":[{"kty":"RSA","alg":"RS256","use":"sig","kid":"\(kid)","n":"\(Base64URL.encode(n))",\
            "e":"\(Base64URL.encode(e))"}]}
            """
    }

    /// An RS256 JWT with `claims`, signed by `key`.
    static func idToken(
        _ claims: [String: Any], key: RSAPrivateKey = signing, kid: String = "k1"
    ) throws -> String {
        let header = Base64URL.encode(Array(#"{"alg":"RS256","kid":"\#(kid)","typ":"JWT"}"#.utf8))
        let payload = Base64URL.encode([UInt8](try JSONSerialization.data(withJSONObject: claims)))
        let signature = try key.signSHA256(Array("\(header).\(payload)".utf8))
        return "\(header).\(payload).\(Base64URL.encode(signature))"
    }

    static func googleClaims(aud: String = audience, exp: Double = now + 600) -> [String: Any] {
        [
            "iss": "https://accounts.google.com", "aud": aud, "sub": "110169484474386276334", "exp": exp,
            "email": "alice@example.com", "email_verified": true,
        ]
    }

    /// Kakao's token information: `good-token` is user 4242's, of app 1000001; any other token is unknown.
    static let kakao: @Sendable (FakeHTTPServer.Request) -> FakeHTTPServer.Reply = { request in
        request.header("authorization") == "Bearer good-token"
            ? .respond(status: 200, body: #"{"id":4242,"expires_in":7199,"app_id":1000001}"#)
            : .respond(status: 401, body: #"{"msg":"this access token does not exist","code":-401}"#)
    }

    /// Naver's profile: `good-token` is member naver-77's; any other token fails authentication.
    static let naver: @Sendable (FakeHTTPServer.Request) -> FakeHTTPServer.Reply = { request in
        request.header("authorization") == "Bearer good-token"
            ? .respond(
                status: 200,
                body: #"{"resultcode":"00","message":"success","response":{"id":"naver-77","email":"a@naver.com"}}"#)
            : .respond(status: 401, body: #"{"resultcode":"024","message":"Authentication failed"}"#)
    }

    private func google(_ server: FakeHTTPServer, clock: NIOLockedValueBox<Double> = .init(now)) -> IDTokenVerifier {
        IDTokenVerifier.google(url: server.baseURL, now: { clock.withLockedValue { $0 } })
    }

    private func refusal(_ body: () async throws -> Void) async -> IdentityProviderError? {
        do {
            try await body()
            return nil
        } catch let error as IdentityProviderError {
            return error
        } catch {
            XCTFail("unexpected \(error)")
            return nil
        }
    }

    func testIdentityGoogleIDTokenIsVerifiedAndItsKeySetCached() async throws {
        let jwks = try Self.jwks()
        try await withFakeServer(replying: .respond(status: 200, body: jwks)) { server in
            let verifier = google(server)
            let account = try await verifier.account(
                fromToken: try Self.idToken(Self.googleClaims()), audiences: [Self.audience])
            XCTAssertEqual(account, ProviderAccount(subject: "110169484474386276334", email: "alice@example.com"))
            _ = try await verifier.account(fromToken: try Self.idToken(Self.googleClaims()), audiences: [Self.audience])
            XCTAssertEqual(server.requests.map(\.path), ["/oauth2/v3/certs"], "the key set is fetched once")
        }
    }

    func testIdentityAppleIDTokenChecksAppleAsIssuer() async throws {
        let jwks = try Self.jwks()
        try await withFakeServer(replying: .respond(status: 200, body: jwks)) { server in
            let verifier = IDTokenVerifier.apple(url: server.baseURL, now: { Self.now })
            var claims = Self.googleClaims(aud: "com.housetainer.app")
            let fromGoogle = await refusal {
                _ = try await verifier.account(fromToken: try Self.idToken(claims), audiences: ["com.housetainer.app"])
            }
            XCTAssertEqual(fromGoogle?.kind, .invalid, "Google's issuer is not Apple's")
            claims["iss"] = "https://appleid.apple.com"
            let account = try await verifier.account(
                fromToken: try Self.idToken(claims), audiences: ["com.housetainer.app"])
            XCTAssertEqual(account.subject, "110169484474386276334")
            XCTAssertEqual(server.requests.first?.path, "/auth/keys")
        }
    }

    func testIdentityIDTokenBadSignatureWrongAudienceAndExpiryAreInvalid() async throws {
        let jwks = try Self.jwks()
        try await withFakeServer(replying: .respond(status: 200, body: jwks)) { server in
            let verifier = google(server)
            let cases: [(String, String)] = [
                (try Self.idToken(Self.googleClaims(), key: Self.other), "a bad signature"),
                (try Self.idToken(Self.googleClaims(aud: "someone-else.apps.googleusercontent.com")), "another app"),
                (try Self.idToken(Self.googleClaims(exp: Self.now - 61)), "expired"),
                (try Self.idToken(Self.googleClaims(), kid: "k1") + "x", "a bad signature"),
                ("not.a.jwt", "not a JWT"),
            ]
            for (token, reason) in cases {
                let error = await refusal {
                    _ = try await verifier.account(fromToken: token, audiences: [Self.audience])
                }
                XCTAssertEqual(error?.kind, .invalid, reason)
                XCTAssertNotNil(error?.reason, reason)
            }
            // A token whose payload was changed after signing is refused too.
            let parts = try Self.idToken(Self.googleClaims()).split(separator: ".")
            var forged = Self.googleClaims()
            forged["sub"] = "someone-else"
            let payload = Base64URL.encode([UInt8](try JSONSerialization.data(withJSONObject: forged)))
            let tampered = await refusal {
                _ = try await verifier.account(
                    fromToken: "\(parts[0]).\(payload).\(parts[2])", audiences: [Self.audience])
            }
            XCTAssertEqual(tampered?.reason, "a bad signature")
        }
    }

    func testIdentityUnknownKeyRefetchesOnceThenWaits() async throws {
        let jwks = try Self.jwks(kid: "rotated")
        try await withFakeServer(replying: .respond(status: 200, body: jwks)) { server in
            let clock = NIOLockedValueBox(Self.now)
            let verifier = google(server, clock: clock)
            let token = try Self.idToken(Self.googleClaims(exp: Self.now + 7_200), kid: "unknown")
            for _ in 0..<3 {
                let error = await refusal {
                    _ = try await verifier.account(fromToken: token, audiences: [Self.audience])
                }
                XCTAssertEqual(error?.kind, .invalid)
            }
            XCTAssertEqual(server.requests.count, 1, "made-up key ids do not make a request each")
            clock.withLockedValue { $0 += 61 }
            _ = await refusal { _ = try await verifier.account(fromToken: token, audiences: [Self.audience]) }
            XCTAssertEqual(server.requests.count, 2, "after a minute the set is fetched again")
        }
    }

    func testIdentityKeySetFailureOrTimeoutIsUnavailable() async throws {
        let token = try Self.idToken(Self.googleClaims())
        try await withFakeServer(replying: .respond(status: 503, body: "down")) { server in
            let error = await refusal {
                _ = try await google(server).account(fromToken: token, audiences: [Self.audience])
            }
            XCTAssertEqual(error?.kind, .unavailable)
        }
        try await withFakeServer(replying: .noAnswer) { server in
            let verifier = IDTokenVerifier(
                provider: "google", issuers: ["https://accounts.google.com"],
                keys: JWKSCache(
                    provider: "google", url: server.baseURL, path: "/oauth2/v3/certs",
                    settings: shortTimeout, now: { Self.now }),
                now: { Self.now })
            let error = await refusal { _ = try await verifier.account(fromToken: token, audiences: [Self.audience]) }
            XCTAssertEqual(error?.kind, .unavailable)
        }
    }

    func testIdentityKakaoAccessTokenIsCheckedAtTokenInfo() async throws {
        try await withFakeServer(answering: Self.kakao) { server in
            let kakao = KakaoTokenVerifier(url: server.baseURL)
            let account = try await kakao.account(fromToken: "good-token", audiences: ["1000001"])
            XCTAssertEqual(account.subject, "4242")
            XCTAssertEqual(server.requests.first?.path, "/v1/user/access_token_info")
            XCTAssertEqual(server.requests.first?.method, "GET")
            let otherApp = await refusal {
                _ = try await kakao.account(fromToken: "good-token", audiences: ["1000002"])
            }
            XCTAssertEqual(otherApp?.reason, "issued to another app")
            let refused = await refusal { _ = try await kakao.account(fromToken: "bad-token", audiences: ["1000001"]) }
            XCTAssertEqual(refused?.kind, .invalid, "401")
            let badShape = await refusal { _ = try await kakao.account(fromToken: "two words", audiences: ["1000001"]) }
            XCTAssertEqual(badShape?.kind, .invalid)
            XCTAssertEqual(server.requests.count, 3, "a token that cannot be a header is not sent")
        }
        try await withFakeServer(replying: .respond(status: 500, body: "")) { server in
            let error = await refusal {
                _ = try await KakaoTokenVerifier(url: server.baseURL).account(fromToken: "t", audiences: ["1000001"])
            }
            XCTAssertEqual(error?.kind, .unavailable)
        }
    }

    func testIdentityNaverAccessTokenIsCheckedAtItsProfile() async throws {
        try await withFakeServer(answering: Self.naver) { server in
            let naver = NaverTokenVerifier(url: server.baseURL)
            let account = try await naver.account(fromToken: "good-token", audiences: ["client"])
            XCTAssertEqual(account, ProviderAccount(subject: "naver-77", email: "a@naver.com"))
            XCTAssertEqual(server.requests.first?.path, "/v1/nid/me")
            let refused = await refusal { _ = try await naver.account(fromToken: "expired", audiences: ["client"]) }
            XCTAssertEqual(refused?.kind, .invalid)
        }
        try await withFakeServer(replying: .noAnswer) { server in
            let naver = NaverTokenVerifier(
                url: server.baseURL, settings: shortTimeout)
            let error = await refusal { _ = try await naver.account(fromToken: "t", audiences: ["client"]) }
            XCTAssertEqual(error?.kind, .unavailable)
        }
    }
}
