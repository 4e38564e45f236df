import Foundation
import HTTPTestSupport
import OutsideSenders
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// AccountService's senders come from its configuration: SendGrid when `--mail-api-url` is set (a fake
/// one here), the development files for the kinds without a provider.
final class OutsideSenderSetupTests: XCTestCase {
    func testAConfiguredMailAPISendsAccountServicesMailAndTheOtherKindsStayInFiles() async throws {
        let harness = try ServiceHarness()
        let keyFile = harness.dataRoot.appendingPathComponent("sendgrid.key")
        try "TEST-FIXTURE-NOT-A-REAL-sendgrid-key".write(to: keyFile, atomically: true, encoding: .utf8)
        try await withFakeServer(replying: .respond(status: 202, body: "")) { server in
            let account = try await harness.start(
                AccountServiceDefinition.self,
                configuration: try harness.configuration(AccountServiceDefinition.defaults) { options in
                    options.mailApiUrl = server.baseURL
                    options.mailApiKeyFile = keyFile.path
                    options.mailFrom = "no-reply@yedi.example"
                })
            let env = account.environment
            try await env.database.write { db in
                try env.outbox.enqueue(in: db, mail: .init(to: "minji@example.com", subject: "s", text: "t"))
                try env.outbox.enqueue(in: db, sms: .init(to: "+821012345678", text: "code"))
            }
            let sent = try await eventually(timeout: 20) {
                server.requests.count == 1
                    && ((try? DevelopmentFileSender.messages(in: env.dataDirectory.appendingPathComponent("sent-sms")))
                        ?? []).count == 1
            }
            XCTAssertTrue(sent, "\(server.requests.count) requests")
            XCTAssertEqual(server.requests.first?.path, "/v3/mail/send")
            XCTAssertEqual(
                server.requests.first?.header("authorization"), "Bearer TEST-FIXTURE-NOT-A-REAL-sendgrid-key")
            let developmentMail =
                (try? DevelopmentFileSender.messages(in: env.dataDirectory.appendingPathComponent("sent-mail"))) ?? []
            XCTAssertEqual(developmentMail.count, 0, "mail went to the API, not to files")
            try await account.stop()
        }
    }
}
