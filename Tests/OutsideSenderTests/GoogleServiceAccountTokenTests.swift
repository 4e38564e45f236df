import Foundation
import HTTPTestSupport
import NIOConcurrencyHelpers
import OutsideSenders
import RPCTestSupport
import ServiceRuntime
import XCTest
import YediCrypto
import YediProto

/// FCM with a service-account key: the JWT bearer grant against a fake Google token endpoint (the
/// assertion's signature and claims checked), the token kept until shortly before it expires by the
/// injected clock, minted again after, dropped on FCM's 401; the endpoint's refusals and failures.
final class GoogleServiceAccountTokenTests: XCTestCase {
    private let push = YediRuntime.PushMessage(
        deviceToken: "device-token-1", title: "약속 30분 전", body: "위치 공유가 시작됐어요", template: "promise-window",
        values: [])
    private let clock = ManualClock(Date(timeIntervalSince1970: 1_790_000_000))

    /// The fake Google: `/token` mints `minted-<n>` (or answers `tokenReply` when set); the FCM path
    /// answers 200, or `fcmStatus`.
    private final class FakeGoogle: Sendable {
        let minted = NIOLockedValueBox(0)
        let tokenReply = NIOLockedValueBox<FakeHTTPServer.Reply?>(nil)
        let fcmStatus = NIOLockedValueBox(200)

        func answer(_ request: FakeHTTPServer.Request) -> FakeHTTPServer.Reply {
            if request.path == "/token" {
                if let reply = tokenReply.withLockedValue({ $0 }) { return reply }
                let n = minted.withLockedValue { value -> Int in
                    value += 1
                    return value
                }
                return .respond(
                    status: 200, body: #"{"access_token":"minted-\#(n)","expires_in":3599,"token_type":"Bearer"}"#)
            }
            let status = fcmStatus.withLockedValue { $0 }
            return .respond(
                status: status, body: status == 200 ? #"{"name":"m"}"# : #"{"error":{"status":"UNAUTHENTICATED"}}"#)
        }
    }

    private func keyJSON(tokenURI: String) throws -> String {
        let object: [String: Any] = [
            "type": "service_account", "project_id": "yedi-test", "private_key_id": "kid-1",
            "private_key": IdentityProviderVerifierTests.signingPEM,
            "client_email": "fcm-sender@yedi-test.iam.gserviceaccount.com", "token_uri": tokenURI,
        ]
        return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    private func sender(_ server: FakeHTTPServer, logs: LogCapture) throws -> FCMPushSender {
        let tokens = GoogleServiceAccountTokens(
            key: .value(Secret(try keyJSON(tokenURI: server.baseURL + "/token"))), clock: clock)
        return FCMPushSender(
            url: server.baseURL, project: "yedi-test", credential: .serviceAccount(tokens), logger: logs.logger())
    }

    /// The assertion's three parts, its signature checked with the key's public half.
    private func verifiedClaims(_ request: FakeHTTPServer.Request) throws -> [String: Any] {
        var form: [String: String] = [:]
        for pair in request.bodyText.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
            form[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        XCTAssertEqual(form["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer")
        XCTAssertEqual(request.header("content-type"), "application/x-www-form-urlencoded")
        let parts = try XCTUnwrap(form["assertion"]).split(separator: ".").map(String.init)
        XCTAssertEqual(parts.count, 3)
        let (n, e) = try IdentityProviderVerifierTests.signing.publicComponents()
        let key = try RSAPublicKey(modulus: n, exponent: e)
        let signature = try XCTUnwrap(Base64URL.decode(parts[2]))
        XCTAssertTrue(key.isValidSHA256Signature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)))
        let header = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(try XCTUnwrap(Base64URL.decode(parts[0])))) as? [String: Any])
        XCTAssertEqual(header["alg"] as? String, "RS256")
        XCTAssertEqual(header["kid"] as? String, "kid-1")
        return try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(try XCTUnwrap(Base64URL.decode(parts[1])))) as? [String: Any])
    }

    func testSenderAKeyMintsOneTokenThatIsKeptUntilShortlyBeforeItExpires() async throws {
        let google = FakeGoogle()
        let logs = LogCapture()
        let (requests, baseURL) = try await withFakeServer(answering: google.answer) { server in
            let sender = try sender(server, logs: logs)
            try await sender.send(push, jobID: "job-1")
            try await sender.send(push, jobID: "job-2")
            clock.advance(by: 3_599 - 300 - 1)
            try await sender.send(push, jobID: "job-3")
            clock.advance(by: 2)
            try await sender.send(push, jobID: "job-4")
            return (server.requests, server.baseURL)
        }
        let tokenRequests = requests.filter { $0.path == "/token" }
        XCTAssertEqual(tokenRequests.count, 2, "one token for the first hour (less the margin), a second after")
        let claims = try verifiedClaims(tokenRequests[0])
        XCTAssertEqual(claims["iss"] as? String, "fcm-sender@yedi-test.iam.gserviceaccount.com")
        XCTAssertEqual(claims["aud"] as? String, baseURL + "/token", "the audience is the token endpoint")
        XCTAssertEqual(claims["scope"] as? String, "https://www.googleapis.com/auth/firebase.messaging")
        XCTAssertEqual((claims["iat"] as? NSNumber)?.int64Value, 1_790_000_000)
        XCTAssertEqual((claims["exp"] as? NSNumber)?.int64Value, 1_790_000_000 + 3_600)
        let bearers = requests.filter { $0.path != "/token" }.map { $0.header("authorization") }
        XCTAssertEqual(bearers, ["Bearer minted-1", "Bearer minted-1", "Bearer minted-1", "Bearer minted-2"])
        XCTAssertFalse(logs.lines.contains { $0.contains("minted-") || $0.contains("PRIVATE KEY") }, "\(logs.lines)")
    }

    func testSenderFCMsUnauthorizedDropsTheTokenAndTheNextSendMintsAnother() async throws {
        let google = FakeGoogle()
        let logs = LogCapture()
        let (error, bearers) = try await withFakeServer(answering: google.answer) { server in
            let sender = try sender(server, logs: logs)
            google.fcmStatus.withLockedValue { $0 = 401 }
            let error = await thrownError { try await sender.send(self.push, jobID: "job-1") }
            google.fcmStatus.withLockedValue { $0 = 200 }
            try await sender.send(push, jobID: "job-2")
            return (error, server.requests.filter { $0.path != "/token" }.map { $0.header("authorization") })
        }
        let refused = try XCTUnwrap(error as? UndeliverableMessage, "\(String(describing: error))")
        XCTAssertEqual(refused.reason, .unauthorized)
        XCTAssertEqual(bearers, ["Bearer minted-1", "Bearer minted-2"])
    }

    func testSenderATokenEndpointRefusalIsTheCredentialsAndAFailureIsRetried() async throws {
        let google = FakeGoogle()
        let logs = LogCapture()
        try await withFakeServer(answering: google.answer) { server in
            let sender = try sender(server, logs: logs)
            google.tokenReply.withLockedValue {
                $0 = .respond(status: 400, body: #"{"error":"invalid_grant","error_description":"Invalid JWT"}"#)
            }
            let refused = await thrownError { try await sender.send(self.push, jobID: "job-1") }
            let undeliverable = try XCTUnwrap(refused as? UndeliverableMessage, "\(String(describing: refused))")
            XCTAssertEqual(undeliverable.reason, .unauthorized)
            XCTAssertEqual(undeliverable.code, "invalid_grant")
            XCTAssertFalse(undeliverable.dropsJob, "the job waits for an operator to fix the key")

            google.tokenReply.withLockedValue { $0 = .respond(status: 503, body: "") }
            let failed = await thrownError { try await sender.send(self.push, jobID: "job-1") }
            XCTAssertTrue(failed is RetryableSendError, "\(String(describing: failed))")
            XCTAssertTrue(server.requests.allSatisfy { $0.path == "/token" }, "nothing reached FCM without a token")
        }
    }

    func testSenderAFileThatIsNoServiceAccountKeyIsRefusedWithoutQuotingIt() async throws {
        let tokens = GoogleServiceAccountTokens(
            key: .value(Secret(#"{"type":"authorized_user","client_secret":"TEST-FIXTURE-NOT-A-REAL-secret"}"#)),
            clock: clock)
        let error = await thrownError { _ = try await tokens.accessToken() }
        let refused = try XCTUnwrap(error as? UndeliverableMessage, "\(String(describing: error))")
        XCTAssertEqual(refused.reason, .unauthorized)
        XCTAssertFalse("\(refused)".contains("TEST-FIXTURE"), "\(refused)")
    }
}
