import Foundation
import HTTPTestSupport
import OutsideSenders
import RPCTestSupport
import ServiceRuntime
import XCTest
import YediProto

/// The SendGrid adapter against a fake SendGrid: the request it sends, and how each answer maps to sent,
/// refused for good or retry later.
final class SendGridMailSenderTests: XCTestCase {
    private let mail = YediRuntime.MailMessage(
        to: "minji@example.com", subject: "[Yedi] 가입 인증 코드 123456", text: "인증 코드: 123456", template: "sign-up-code")

    private func sender(
        _ server: FakeHTTPServer, logs: LogCapture = LogCapture(), settings: ProviderHTTPSettings = .init()
    )
        -> SendGridMailSender
    {
        SendGridMailSender(
            url: server.baseURL, apiKey: .value(Secret(FixtureSecrets.sendGridKey)), from: "no-reply@yedi.example",
            settings: settings, logger: logs.logger())
    }

    func testA202SendsTheMailWithTheKeyAndTheJobID() async throws {
        let requests = try await withFakeServer(replying: .respond(status: 202, body: "")) { server in
            try await sender(server).send(mail, jobID: "job-1")
            return server.requests
        }
        XCTAssertEqual(requests.count, 1)
        let request = try XCTUnwrap(requests.first)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/v3/mail/send")
        XCTAssertEqual(request.header("authorization"), "Bearer \(FixtureSecrets.sendGridKey)")
        XCTAssertEqual(request.header("content-type"), "application/json; charset=utf-8")
        let body = try json(request)
        let personalizations = try XCTUnwrap(body["personalizations"] as? [[String: Any]])
        XCTAssertEqual((personalizations.first?["to"] as? [[String: String]])?.first?["email"], "minji@example.com")
        XCTAssertEqual((body["from"] as? [String: String])?["email"], "no-reply@yedi.example")
        XCTAssertEqual(body["subject"] as? String, mail.subject)
        XCTAssertEqual((body["content"] as? [[String: String]])?.first, ["type": "text/plain", "value": mail.text])
        XCTAssertEqual((body["custom_args"] as? [String: String])?["yedi_job_id"], "job-1")
    }

    func testA400IsRefusedForGoodAndTheLogHoldsNoSecret() async throws {
        let logs = LogCapture()
        let error = try await withFakeServer(
            replying: .respond(
                status: 400,
                body:
                    #"{"errors":[{"message":"Does not contain a valid address.","field":"personalizations.0.to.0.email"}]}"#
            )
        ) { server in
            await thrownError { try await self.sender(server, logs: logs).send(self.mail, jobID: "job-2") }
        }
        let refused = try XCTUnwrap(error as? UndeliverableMessage, "\(String(describing: error))")
        XCTAssertEqual(refused.reason, .rejected)
        XCTAssertEqual(refused.status, 400)
        XCTAssertEqual(refused.code, "Does not contain a valid address.")
        XCTAssertTrue(refused.dropsJob)
        XCTAssertFalse(logs.lines.isEmpty, "the failure is logged")
        XCTAssertTrue(logs.lines.contains { $0.contains("job-2") }, "\(logs.lines)")
        XCTAssertFalse(logs.lines.contains { $0.contains(FixtureSecrets.sendGridKey) }, "\(logs.lines)")
        XCTAssertFalse("\(refused)".contains(FixtureSecrets.sendGridKey))
    }

    func testA401IsUnauthorizedAndKeepsTheJob() async throws {
        let error = try await withFakeServer(
            replying: .respond(status: 401, body: #"{"errors":[{"message":"bad key"}]}"#)
        ) {
            server in await thrownError { try await self.sender(server).send(self.mail, jobID: "job-3") }
        }
        let refused = try XCTUnwrap(error as? UndeliverableMessage)
        XCTAssertEqual(refused.reason, .unauthorized)
        XCTAssertFalse(refused.dropsJob, "a wrong key is fixed by an operator; the mail waits")
    }

    func testA5xxOrA429IsRetryable() async throws {
        for status in [500, 503, 429] {
            let error = try await withFakeServer(
                replying: .respond(status: status, body: "busy", contentType: "text/plain")
            ) {
                server in await thrownError { try await self.sender(server).send(self.mail, jobID: "job-4") }
            }
            let retry = try XCTUnwrap(error as? RetryableSendError, "\(status): \(String(describing: error))")
            XCTAssertEqual(retry.status, status)
            XCTAssertEqual(retry.provider, "sendgrid")
        }
    }

    func testNoAnswerInTimeIsARetryableTimeout() async throws {
        let error = try await withFakeServer(replying: .noAnswer) { server in
            await thrownError { try await self.sender(server, settings: shortTimeout).send(self.mail, jobID: "job-5") }
        }
        let retry = try XCTUnwrap(error as? RetryableSendError, "\(String(describing: error))")
        XCTAssertNil(retry.status)
        XCTAssertEqual(retry.code, "timeout")
    }

    func testTheKeyFileIsReadAtEachSendSoItRotatesWithoutARestart() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "yedi-sendgrid-key-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try "TEST-FIXTURE-key-1\n".write(to: file, atomically: true, encoding: .utf8)
        let keys = try await withFakeServer(replying: .respond(status: 202, body: "")) { server in
            let sender = SendGridMailSender(
                url: server.baseURL, apiKey: .file(file.path), from: "no-reply@yedi.example",
                logger: LogCapture().logger())
            try await sender.send(mail, jobID: "job-6")
            try "TEST-FIXTURE-key-2".write(to: file, atomically: true, encoding: .utf8)
            try await sender.send(mail, jobID: "job-7")
            return server.requests.map { $0.header("authorization") }
        }
        XCTAssertEqual(keys, ["Bearer TEST-FIXTURE-key-1", "Bearer TEST-FIXTURE-key-2"])
    }
}
