import Foundation
import GRDB
import NIOConcurrencyHelpers
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// SMS and push go through the outbox like mail: AccountService registers the development senders, which
/// write one readable file per job; a job its sender refuses for good is dropped and reported, and does
/// not hold back the next one.
final class OutsideSenderOutboxTests: XCTestCase {
    private var harness: ServiceHarness!

    override func setUpWithError() throws {
        harness = try ServiceHarness()
    }

    func testSmsAndPushJobsReachTheDevelopmentSendersFiles() async throws {
        let account = try await harness.start(
            AccountServiceDefinition.self,
            configuration: try harness.configuration(AccountServiceDefinition.defaults))
        let env = account.environment
        let sms = YediRuntime.SmsMessage(
            to: "+821012345678", text: "[Yedi] 인증 코드 654321", template: "phone-sign-in-code",
            values: [.init(name: "code", value: "654321")])
        let push = YediRuntime.PushMessage(
            deviceToken: "device-1", title: "내일 예약", body: "오후 3시", template: "reservation-reminder")
        let (smsJob, pushJob) = try await env.database.write { db in
            (try env.outbox.enqueue(in: db, sms: sms), try env.outbox.enqueue(in: db, push: push))
        }
        let smsFolder = env.dataDirectory.appendingPathComponent("sent-sms")
        let pushFolder = env.dataDirectory.appendingPathComponent("sent-push")
        let written = try await eventually(timeout: 20) {
            ((try? DevelopmentFileSender.messages(in: smsFolder)) ?? []).count == 1
                && ((try? DevelopmentFileSender.messages(in: pushFolder)) ?? []).count == 1
        }
        XCTAssertTrue(written)
        let sent = try XCTUnwrap(try DevelopmentFileSender.messages(in: smsFolder).first)
        XCTAssertEqual(sent.id, smsJob)
        XCTAssertEqual(sent.kind, .sms)
        XCTAssertEqual(sent.to, "+821012345678")
        XCTAssertEqual(sent.values, ["code": "654321"])
        let notified = try XCTUnwrap(try DevelopmentFileSender.messages(in: pushFolder).first)
        XCTAssertEqual(notified.id, pushJob)
        XCTAssertEqual(notified.kind, .push)
        XCTAssertEqual(notified.to, "device-1")
        XCTAssertEqual(notified.subject, "내일 예약")
        XCTAssertEqual(notified.text, "오후 3시")
        try await account.stop()
    }

    /// A deleted account's pending mail, SMS and pushes go (`Outbox.dropOutsideMessages`): the ones that
    /// carry one of the mentions anywhere in the message, never another's, never a job to a peer.
    func testDroppingOutsideMessagesTakesOnlyThoseMentioningAndNoPeerJob() async throws {
        let account = try await harness.start(
            AccountServiceDefinition.self,
            configuration: try harness.configuration(AccountServiceDefinition.defaults))
        let env = account.environment
        let dropped = try await env.database.write { db in
            try env.outbox.enqueue(
                in: db,
                push: .init(
                    deviceToken: "partner-phone", title: "스터디 요청", body: "", template: "slp-request",
                    values: [.init(name: "from_id", value: "user-gone")]))
            try env.outbox.enqueue(in: db, sms: .init(to: "+821099998888", text: "[SLP] 인증번호 123456"))
            try env.outbox.enqueue(in: db, push: .init(deviceToken: "other-phone", title: "새 메시지", body: "안녕"))
            try env.outbox.enqueue(
                in: db, peer: "chat", method: YediChat.ChatService.Method.purgeUser, request: .init(userID: "user-gone")
            )
            return try env.outbox.dropOutsideMessages(mentioning: ["user-gone", "+821099998888", ""], in: db)
        }
        XCTAssertEqual(dropped, 2, "the push naming the user and the SMS to their number")
        let pushFolder = env.dataDirectory.appendingPathComponent("sent-push")
        let sent = try await eventually(timeout: 20) {
            ((try? DevelopmentFileSender.messages(in: pushFolder)) ?? []).map(\.to) == ["other-phone"]
        }
        XCTAssertTrue(sent, "another member's push went out")
        let peerJobs = try await env.database.read { db in
            try String.fetchAll(db, sql: "SELECT peer FROM runtime_outbox WHERE peer = 'chat'")
        }
        XCTAssertEqual(peerJobs, ["chat"], "a job to a peer (the purge) is kept")
        try await account.stop()
    }

    func testADeadDeviceTokenDropsItsJobIsReportedAndDoesNotHoldBackTheNext() async throws {
        let account = try await harness.start(
            AccountServiceDefinition.self,
            configuration: try harness.configuration(AccountServiceDefinition.defaults))
        let env = account.environment
        let sender = TokenCheckingPushSender(deadToken: "dead-token")
        env.outbox.register(sender)
        let reported = NIOLockedValueBox<[UndeliverableJob]>([])
        env.outbox.onUndeliverable { job in reported.withLockedValue { $0.append(job) } }
        let deadJob = try await env.database.write { db in
            let dead = try env.outbox.enqueue(in: db, push: .init(deviceToken: "dead-token", title: "t", body: "b"))
            try env.outbox.enqueue(in: db, push: .init(deviceToken: "live-token", title: "t", body: "b"))
            return dead
        }
        let drained = try await eventually(timeout: 20) {
            try await env.database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox") } == 0
                && !reported.withLockedValue { $0.isEmpty }
        }
        XCTAssertTrue(drained)
        XCTAssertEqual(sender.delivered, ["live-token"], "the job after the dead token was sent")
        let job = try XCTUnwrap(reported.withLockedValue { $0.first })
        XCTAssertEqual(job.id, deadJob)
        XCTAssertEqual(job.destination, OutsideMessageKind.push.destination)
        XCTAssertTrue(job.error.isDeadDeviceToken)
        XCTAssertEqual(try YediRuntime.PushMessage(serializedBytes: job.payload).deviceToken, "dead-token")
        try await account.stop()
    }
}

/// Says "dead" for one token (as FCM's UNREGISTERED does) and records the others.
private final class TokenCheckingPushSender: PushSender {
    let deadToken: String
    private let sent = NIOLockedValueBox<[String]>([])

    init(deadToken: String) {
        self.deadToken = deadToken
    }

    var delivered: [String] { sent.withLockedValue { $0 } }

    func send(_ push: YediRuntime.PushMessage, jobID: String) async throws {
        if push.deviceToken == deadToken {
            throw UndeliverableMessage(reason: .deadDeviceToken, provider: "test", status: 404, code: "UNREGISTERED")
        }
        sent.withLockedValue { $0.append(push.deviceToken) }
    }
}
