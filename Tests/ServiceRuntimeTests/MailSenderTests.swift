import Foundation
import GRDB
import NIOConcurrencyHelpers
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Mail goes through the outbox: sent after the commit, retried while the sender fails, handed over
/// once per job; the development sender writes one file per job that a person (or the probe) reads.
final class MailSenderTests: XCTestCase {
    private var harness: ServiceHarness!

    override func setUpWithError() throws {
        harness = try ServiceHarness()
    }

    func testAMailJobIsRetriedWhileTheSenderFailsAndSentOnce() async throws {
        let account = try await harness.start(
            AccountServiceDefinition.self,
            configuration: try harness.configuration(AccountServiceDefinition.defaults))
        let env = account.environment
        let sender = FlakyMailSender(failures: 2)
        env.outbox.register(sender)
        let mail = YediRuntime.MailMessage(to: "minji@example.com", subject: "제목", text: "본문", template: "test")
        let jobID = try await env.database.write { db in try env.outbox.enqueue(in: db, mail: mail) }

        let sent = try await eventually(timeout: 20) { sender.sent.count == 1 }
        XCTAssertTrue(sent, "attempts: \(sender.attempts)")
        XCTAssertEqual(sender.attempts, 3, "two failures, then the send")
        XCTAssertEqual(sender.sent.first?.jobID, jobID)
        XCTAssertEqual(sender.sent.first?.mail, mail)
        let drained = try await eventually(timeout: 10) {
            try await env.database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox") } == 0
        }
        XCTAssertTrue(drained)
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertEqual(sender.sent.count, 1, "a sent job is not sent again")
        try await account.stop()
    }

    func testAMailOfARolledBackTransactionIsNeverSent() async throws {
        let account = try await harness.start(
            AccountServiceDefinition.self,
            configuration: try harness.configuration(AccountServiceDefinition.defaults))
        let env = account.environment
        let sender = FlakyMailSender(failures: 0)
        env.outbox.register(sender)
        struct Abort: Error {}
        _ = try? await env.database.write { db in
            try env.outbox.enqueue(in: db, mail: .init(to: "a@example.com", subject: "s", text: "t"))
            throw Abort()
        }
        _ = try await env.database.write { db in
            try env.outbox.enqueue(in: db, mail: .init(to: "b@example.com", subject: "s", text: "t"))
        }
        _ = try await eventually(timeout: 20) { sender.sent.count == 1 }
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertEqual(sender.sent.map(\.mail.to), ["b@example.com"])
        try await account.stop()
    }

    func testTheDevelopmentSenderWritesOneReadableFilePerJob() async throws {
        let folder = harness.dataRoot.appendingPathComponent("sent-mail")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let clock = ManualClock()
        let sender = DevelopmentFileSender(folder: folder, clock: clock)
        let mail = YediRuntime.MailMessage(
            to: "minji@example.com", subject: "[Yedi] 가입 인증 코드 123456", text: "인증 코드: 123456",
            template: "sign-up-code", values: [.init(name: "code", value: "123456")])
        try await sender.send(mail, jobID: "job-1")
        try await sender.send(mail, jobID: "job-1")  // a retry of the same job
        clock.advance(by: 1)
        try await sender.send(.init(to: "jiho@example.com", subject: "s", text: "t"), jobID: "job-2")

        let messages = try DevelopmentFileSender.messages(in: folder)
        XCTAssertEqual(messages.map(\.id), ["job-1", "job-2"], "a retry rewrote its own file")
        XCTAssertEqual(messages[0].to, "minji@example.com")
        XCTAssertEqual(messages[0].values, ["code": "123456"])
        XCTAssertEqual(messages[0].sentAtMs, clock.nowMilliseconds - 1_000)
        let text = try String(contentsOf: folder.appendingPathComponent("job-1.json"), encoding: .utf8)
        XCTAssertTrue(text.contains("\"subject\" : \"[Yedi] 가입 인증 코드 123456\""), text)
    }
}

/// Fails its first `failures` sends, then records each.
private final class FlakyMailSender: MailSender {
    private let state:
        NIOLockedValueBox<(failuresLeft: Int, attempts: Int, sent: [(jobID: String, mail: YediRuntime.MailMessage)])>

    init(failures: Int) {
        state = NIOLockedValueBox((failures, 0, []))
    }

    var attempts: Int { state.withLockedValue { $0.attempts } }
    var sent: [(jobID: String, mail: YediRuntime.MailMessage)] { state.withLockedValue { $0.sent } }

    func send(_ mail: YediRuntime.MailMessage, jobID: String) async throws {
        try state.withLockedValue { state in
            state.attempts += 1
            if state.failuresLeft > 0 {
                state.failuresLeft -= 1
                throw RPCError(code: .unavailable, message: "mail API down")
            }
            state.sent.append((jobID, mail))
        }
    }
}
