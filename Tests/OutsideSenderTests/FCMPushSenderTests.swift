import Foundation
import HTTPTestSupport
import OutsideSenders
import RPCTestSupport
import ServiceRuntime
import XCTest
import YediProto

/// The FCM HTTP v1 adapter against a fake FCM: the request it sends, a dead device token recognisable
/// as such, other refusals, retryable answers and timeouts, and answers read only up to the bound.
final class FCMPushSenderTests: XCTestCase {
    private let push = YediRuntime.PushMessage(
        deviceToken: "device-token-1", title: "내일 예약", body: "오후 3시 예약이 있어요", template: "reservation-reminder",
        values: [.init(name: "reservation_id", value: "r-9")])

    private func sender(
        _ server: FakeHTTPServer, logs: LogCapture = LogCapture(), settings: ProviderHTTPSettings = .init()
    )
        -> FCMPushSender
    {
        FCMPushSender(
            url: server.baseURL, project: "yedi-test", accessToken: .value(Secret(FixtureSecrets.fcmAccessToken)),
            settings: settings, logger: logs.logger())
    }

    private static func fcmError(status: Int, name: String, errorCode: String) -> String {
        """
        {"error":{"code":\(status),"message":"refused","status":"\(name)","details":[{"@type":\
        "type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\(errorCode)"}]}}
        """
    }

    func testASentPushCarriesTheTokenNotificationDataAndBearerToken() async throws {
        let requests = try await withFakeServer(
            replying: .respond(status: 200, body: #"{"name":"projects/yedi-test/messages/0:1"}"#)
        ) { server in
            try await sender(server).send(push, jobID: "job-1")
            return server.requests
        }
        let request = try XCTUnwrap(requests.first)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/v1/projects/yedi-test/messages:send")
        XCTAssertEqual(request.header("authorization"), "Bearer \(FixtureSecrets.fcmAccessToken)")
        let message = try XCTUnwrap(try json(request)["message"] as? [String: Any])
        XCTAssertEqual(message["token"] as? String, "device-token-1")
        XCTAssertEqual(message["notification"] as? [String: String], ["title": "내일 예약", "body": "오후 3시 예약이 있어요"])
        XCTAssertEqual(
            message["data"] as? [String: String],
            ["reservation_id": "r-9", "yedi_job_id": "job-1", "yedi_template": "reservation-reminder"])
    }

    func testUnregisteredSaysTheDeviceTokenIsDeadAndTheLogHoldsNoSecret() async throws {
        let logs = LogCapture()
        let error = try await withFakeServer(
            replying: .respond(
                status: 404, body: Self.fcmError(status: 404, name: "NOT_FOUND", errorCode: "UNREGISTERED"))
        ) { server in
            await thrownError { try await self.sender(server, logs: logs).send(self.push, jobID: "job-2") }
        }
        let refused = try XCTUnwrap(error as? UndeliverableMessage, "\(String(describing: error))")
        XCTAssertTrue(refused.isDeadDeviceToken)
        XCTAssertEqual(refused.code, "UNREGISTERED")
        XCTAssertTrue(refused.dropsJob)
        XCTAssertTrue(logs.lines.contains { $0.contains("UNREGISTERED") }, "\(logs.lines)")
        XCTAssertFalse(logs.lines.contains { $0.contains(FixtureSecrets.fcmAccessToken) }, "\(logs.lines)")
    }

    func testInvalidArgumentIsRejectedButNotADeadToken() async throws {
        let error = try await withFakeServer(
            replying: .respond(
                status: 400, body: Self.fcmError(status: 400, name: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT"))
        ) { server in await thrownError { try await self.sender(server).send(self.push, jobID: "job-3") } }
        let refused = try XCTUnwrap(error as? UndeliverableMessage, "\(String(describing: error))")
        XCTAssertEqual(refused.reason, .rejected)
        XCTAssertFalse(refused.isDeadDeviceToken)
    }

    func testAnExpiredAccessTokenIsUnauthorized() async throws {
        let error = try await withFakeServer(
            replying: .respond(status: 401, body: #"{"error":{"code":401,"status":"UNAUTHENTICATED"}}"#)
        ) { server in await thrownError { try await self.sender(server).send(self.push, jobID: "job-4") } }
        XCTAssertEqual((error as? UndeliverableMessage)?.reason, .unauthorized, "\(String(describing: error))")
    }

    func testUnavailableAndQuotaExceededAreRetryable() async throws {
        for (status, name) in [(503, "UNAVAILABLE"), (429, "QUOTA_EXCEEDED"), (500, "INTERNAL")] {
            let error = try await withFakeServer(
                replying: .respond(status: status, body: Self.fcmError(status: status, name: name, errorCode: name))
            ) { server in await thrownError { try await self.sender(server).send(self.push, jobID: "job-5") } }
            let retry = try XCTUnwrap(error as? RetryableSendError, "\(status): \(String(describing: error))")
            XCTAssertEqual(retry.code, name)
        }
    }

    func testNoAnswerInTimeIsARetryableTimeout() async throws {
        let error = try await withFakeServer(replying: .noAnswer) { server in
            await thrownError { try await self.sender(server, settings: shortTimeout).send(self.push, jobID: "job-6") }
        }
        XCTAssertEqual((error as? RetryableSendError)?.code, "timeout", "\(String(describing: error))")
    }

    func testAnOversizedAnswerIsReadOnlyUpToTheBound() async throws {
        // A dead-token answer padded past the 1 KiB bound: only its start is read, which still names the code.
        let padded = Self.fcmError(status: 404, name: "NOT_FOUND", errorCode: "UNREGISTERED")
            .replacingOccurrences(
                of: #""message":"refused""#, with: #""message":"\#(String(repeating: "x", count: 200_000))""#)
        let error = try await withFakeServer(replying: .respond(status: 404, body: padded)) { server in
            await thrownError {
                try await self.sender(server, settings: ProviderHTTPSettings(maxResponseBytes: 1_024))
                    .send(self.push, jobID: "job-7")
            }
        }
        // The cut body is not JSON any more: the status alone decides (404: refused for good).
        let refused = try XCTUnwrap(error as? UndeliverableMessage, "\(String(describing: error))")
        XCTAssertEqual(refused.reason, .rejected)
        XCTAssertEqual(refused.status, 404)
    }
}
