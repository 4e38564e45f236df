import Foundation
import HTTPTestSupport
import OutsideSenders
import RPCTestSupport
import ServiceRuntime
import XCTest
import YediProto

/// The NHN Cloud SMS adapter against a fake NHN Cloud: the request it sends, and how each answer (including
/// NHN's refusals inside an HTTP 200) maps to sent, refused for good or retry later.
final class NHNCloudSmsSenderTests: XCTestCase {
    private let sms = YediRuntime.SmsMessage(
        to: "+821012345678", text: "[Yedi] 인증 코드 654321", template: "phone-sign-in-code",
        values: [.init(name: "code", value: "654321")])

    private static let accepted = """
        {"header":{"isSuccessful":true,"resultCode":0,"resultMessage":"SUCCESS"},"body":{"data":{"requestId":"r-1",\
        "statusCode":"2","senderGroupingKey":"job-1","sendResultList":[{"recipientNo":"01012345678","resultCode":0,\
        "resultMessage":"SUCCESS","recipientSeq":1}]}}}
        """

    private func sender(
        _ server: FakeHTTPServer, logs: LogCapture = LogCapture(), settings: ProviderHTTPSettings = .init()
    )
        -> NHNCloudSmsSender
    {
        NHNCloudSmsSender(
            url: server.baseURL, appKey: "TestAppKey", secretKey: .value(Secret(FixtureSecrets.nhnSecretKey)),
            senderNumber: "0215440000", settings: settings, logger: logs.logger())
    }

    func testAnAcceptedSmsSendsTheNumberTextAndJobID() async throws {
        let requests = try await withFakeServer(replying: .respond(status: 200, body: Self.accepted)) { server in
            try await sender(server).send(sms, jobID: "job-1")
            return server.requests
        }
        let request = try XCTUnwrap(requests.first)
        XCTAssertEqual(requests.count, 1)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/sms/v3.0/appKeys/TestAppKey/sender/sms")
        XCTAssertEqual(request.header("x-secret-key"), FixtureSecrets.nhnSecretKey)
        XCTAssertNil(request.header("authorization"))
        let body = try json(request)
        XCTAssertEqual(body["body"] as? String, sms.text)
        XCTAssertEqual(body["sendNo"] as? String, "0215440000")
        XCTAssertEqual(body["senderGroupingKey"] as? String, "job-1")
        XCTAssertEqual(
            body["recipientList"] as? [[String: String]], [["recipientNo": "01012345678", "countryCode": "82"]])
    }

    func testAForeignNumberGoesInInternationalForm() {
        XCTAssertEqual(NHNCloudSmsSender.recipient("+14155550100"), ["internationalRecipientNo": "14155550100"])
    }

    func testARefusalInsideA200IsPermanentAndTheLogHoldsNoSecret() async throws {
        let logs = LogCapture()
        let refusal = #"{"header":{"isSuccessful":false,"resultCode":-1000,"resultMessage":"Invalid appKey"}}"#
        let error = try await withFakeServer(replying: .respond(status: 200, body: refusal)) { server in
            await thrownError { try await self.sender(server, logs: logs).send(self.sms, jobID: "job-2") }
        }
        let refused = try XCTUnwrap(error as? UndeliverableMessage, "\(String(describing: error))")
        XCTAssertEqual(refused.reason, .rejected)
        XCTAssertEqual(refused.code, "-1000")
        XCTAssertTrue(logs.lines.contains { $0.contains("job-2") }, "\(logs.lines)")
        XCTAssertFalse(logs.lines.contains { $0.contains(FixtureSecrets.nhnSecretKey) }, "\(logs.lines)")
    }

    func testARefusedRecipientIsPermanent() async throws {
        let body = Self.accepted.replacingOccurrences(
            of: #""resultCode":0,"resultMessage":"SUCCESS","recipientSeq""#,
            with: #""resultCode":-2001,"resultMessage":"Invalid recipient","recipientSeq""#)
        let error = try await withFakeServer(replying: .respond(status: 200, body: body)) { server in
            await thrownError { try await self.sender(server).send(self.sms, jobID: "job-3") }
        }
        XCTAssertEqual((error as? UndeliverableMessage)?.code, "recipient -2001", "\(String(describing: error))")
    }

    func testA4xxIsPermanentAnd5xxRetryable() async throws {
        let notFound = try await withFakeServer(replying: .respond(status: 404, body: "{}")) { server in
            await thrownError { try await self.sender(server).send(self.sms, jobID: "job-4") }
        }
        XCTAssertEqual((notFound as? UndeliverableMessage)?.reason, .rejected, "\(String(describing: notFound))")
        let down = try await withFakeServer(replying: .respond(status: 502, body: "<html>bad gateway</html>")) {
            server in await thrownError { try await self.sender(server).send(self.sms, jobID: "job-5") }
        }
        XCTAssertEqual((down as? RetryableSendError)?.status, 502, "\(String(describing: down))")
    }

    func testNoAnswerInTimeIsARetryableTimeout() async throws {
        let error = try await withFakeServer(replying: .noAnswer) { server in
            await thrownError { try await self.sender(server, settings: shortTimeout).send(self.sms, jobID: "job-6") }
        }
        XCTAssertEqual((error as? RetryableSendError)?.code, "timeout", "\(String(describing: error))")
    }
}
