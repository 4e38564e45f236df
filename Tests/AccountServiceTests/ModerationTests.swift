import Foundation
import GRDB
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Moderation over TLS with the repository's app files: reports count once per reporter and stay in
/// their app, operators act only on their own app's cases and members, every action is logged, and a
/// suspension revokes the member here and (through the outbox) everywhere.
final class ModerationTests: XCTestCase {
    private var fixture: AccountFixture!

    override func setUp() async throws {
        fixture = try await AccountFixture.start { $0.apps = AccountFixture.repositoryApps }
    }

    override func tearDown() async throws {
        try await fixture?.stop()
    }

    private var moderation: YediModeration.Moderation.Client { YediModeration.Moderation.Client(fixture.client) }

    private func member(_ id: String, app: AppID, role: UserRole = "member") async throws -> CallOptions {
        try await fixture.member(id, app: app, role: role)
    }

    private func token(_ id: String, app: AppID, role: UserRole) throws -> CallOptions {
        try fixture.token(id, app: app, role: role)
    }

    private func status(_ call: () async throws -> some Any) async -> StatusCode {
        do {
            _ = try await call()
            return .ok
        } catch let error as RPCError {
            return error.code
        } catch {
            return .unknown
        }
    }

    func testTenantAReportCountsOncePerReporterAndNeverReachesAnotherApp() async throws {
        let ana = try await member("slp-ana", app: "slp")
        let bo = try await member("slp-bo", app: "slp")
        _ = bo
        let cy = try await member("slp-cy", app: "slp")
        let yedi = try await member("yedi-dan", app: .yedi, role: .customer)

        let first = try await moderation.reportMember(
            .init(reporteeID: "slp-bo", reasons: ["2", "1", "2"], comment: "노쇼"), options: ana)
        XCTAssertTrue(first.counted)
        let firstCases = try await moderation.listMyCases(.init(), options: ana)
        XCTAssertEqual(firstCases.cases.map(\.reasons), [["1", "2"]], "reasons deduplicated, in order")
        let again = try await moderation.reportMember(.init(reporteeID: "slp-bo", reasons: ["3"]), options: ana)
        XCTAssertEqual(again.reportID, first.reportID, "one report per reporter and reportee")
        XCTAssertFalse(again.counted)
        let other = try await moderation.reportMember(.init(reporteeID: "slp-bo", reasons: ["1"]), options: cy)
        XCTAssertTrue(other.counted)
        let reporters = try await SQLiteModerationStore(
            database: fixture.service.environment.database, revokedUsers: fixture.service.environment.revokedUsers,
            events: AccountEvents(outbox: fixture.service.environment.outbox)
        ).reporterCount(of: "slp-bo", app: "slp")
        XCTAssertEqual(reporters, 2, "distinct reporters")

        let mine = try await moderation.listMyCases(.init(), options: ana)
        XCTAssertEqual(mine.cases.map(\.reasons), [["3"]], "SLP's file: a second report replaces the first")
        XCTAssertEqual(mine.cases.map(\.content), [""])

        // Another app's member is not found, whoever asks; YeDi takes no reports; bad reasons are named.
        let crossApp = await status {
            try await self.moderation.reportMember(.init(reporteeID: "yedi-dan", reasons: ["1"]), options: ana)
        }
        XCTAssertEqual(crossApp, .notFound)
        let fromYedi = await status {
            try await self.moderation.reportMember(.init(reporteeID: "slp-bo", reasons: ["1"]), options: yedi)
        }
        XCTAssertEqual(fromYedi, .failedPrecondition)
        let badReason = await status {
            try await self.moderation.reportMember(.init(reporteeID: "slp-bo", reasons: ["9"]), options: cy)
        }
        XCTAssertEqual(badReason, .invalidArgument)
        let noReason = await status {
            try await self.moderation.reportMember(.init(reporteeID: "slp-bo", reasons: []), options: cy)
        }
        XCTAssertEqual(noReason, .invalidArgument)
        let myself = await status {
            try await self.moderation.reportMember(.init(reporteeID: "slp-ana", reasons: ["1"]), options: ana)
        }
        XCTAssertEqual(myself, .invalidArgument)
    }

    /// An app whose file does not set `repeated_report_replaces` (Housetainer) keeps the first report.
    func testTenantASecondReportLeavesTheFirstWhereTheAppFileDoesNotReplace() async throws {
        let host = try await member("ht-host", app: "housetainer")
        _ = try await member("ht-guest", app: "housetainer")
        let first = try await moderation.reportMember(
            .init(reporteeID: "ht-guest", reasons: ["기타"], comment: "처음"), options: host)
        XCTAssertTrue(first.counted)
        let again = try await moderation.reportMember(
            .init(reporteeID: "ht-guest", reasons: ["불쾌한 표현"], comment: "다시"), options: host)
        XCTAssertEqual(again.reportID, first.reportID)
        XCTAssertFalse(again.counted)
        let mine = try await moderation.listMyCases(.init(), options: host)
        XCTAssertEqual(mine.cases.map(\.reasons), [["기타"]], "the first report stands")
        XCTAssertEqual(mine.cases.map(\.content), ["처음"])
    }

    func testTenantOperatorsActOnTheirOwnAppOnlyAndEveryActionIsLogged() async throws {
        let ana = try await member("slp-ana", app: "slp")
        let bo = try await member("slp-bo", app: "slp")
        let op = try await member("slp-op", app: "slp", role: "operator")
        let admin = try await member("ht-admin", app: "housetainer", role: "admin")
        let host = try await member("ht-host", app: "housetainer")

        _ = try await moderation.reportMember(.init(reporteeID: "slp-bo", reasons: ["4"]), options: ana)
        let question = try await moderation.submitInquiry(.init(title: "환불 문의", content: "언제 되나요?"), options: ana)
        _ = try await moderation.submitInquiry(.init(title: "초대 코드", content: "코드가 안 와요"), options: host)

        // Members are not operators; an SLP token with Housetainer's operator role is not a token.
        let byMember = await status { try await self.moderation.listCases(.init(), options: ana) }
        XCTAssertEqual(byMember, .permissionDenied)
        let slpAdmin = try token("slp-op", app: "slp", role: "admin")
        let forged = await status { try await self.moderation.listCases(.init(), options: slpAdmin) }
        XCTAssertEqual(forged, .unauthenticated)

        let slpCases = try await moderation.listCases(.init(), options: op)
        XCTAssertEqual(slpCases.cases.count, 2)
        XCTAssertTrue(slpCases.cases.allSatisfy { $0.writerID == "slp-ana" })
        let htCases = try await moderation.listCases(.init(kind: .inquiry), options: admin)
        XCTAssertEqual(htCases.cases.map(\.writerID), ["ht-host"], "each app's operators see their own app's cases")

        let crossAnswer = await status {
            try await self.moderation.answerCase(.init(caseID: question.inquiryID, answer: "곧 됩니다"), options: admin)
        }
        XCTAssertEqual(crossAnswer, .notFound)
        fixture.clock.advance(by: 1)  // the log's order is by time
        let answered = try await moderation.answerCase(
            .init(caseID: question.inquiryID, answer: "3일 안에 됩니다"), options: op)
        XCTAssertEqual(answered.answer, "3일 안에 됩니다")
        let again = await status {
            try await self.moderation.answerCase(.init(caseID: question.inquiryID, answer: "다시"), options: op)
        }
        XCTAssertEqual(again, .failedPrecondition, "an answer is final")
        let unanswered = try await moderation.listCases(.init(unansweredOnly: true), options: op)
        XCTAssertEqual(unanswered.cases.map(\.kind), [.report])
        let seenByWriter = try await moderation.listMyCases(.init(), options: ana)
        XCTAssertEqual(seenByWriter.cases.first { $0.id == question.inquiryID }?.answer, "3일 안에 됩니다")

        // Suspension: another app's member is not found; bo's token stops working at once.
        let until = fixture.clock.nowMilliseconds + 3_600_000
        let crossSuspend = await status {
            try await self.moderation.suspendMember(
                .init(userID: "ht-host", reason: "spam", untilMs: until), options: op)
        }
        XCTAssertEqual(crossSuspend, .notFound)
        let past = await status {
            try await self.moderation.suspendMember(.init(userID: "slp-bo", reason: "spam", untilMs: 1), options: op)
        }
        XCTAssertEqual(past, .invalidArgument)
        let beforeSuspension = await status { try await self.moderation.listMyCases(.init(), options: bo) }
        XCTAssertEqual(beforeSuspension, .ok)
        fixture.clock.advance(by: 1)
        _ = try await moderation.suspendMember(.init(userID: "slp-bo", reason: "욕설 신고 3회", untilMs: until), options: op)
        let afterSuspension = await status { try await self.moderation.listMyCases(.init(), options: bo) }
        XCTAssertEqual(afterSuspension, .unauthenticated, "the member's tokens are revoked")
        let revocations = try await fixture.service.environment.database.read { db in
            try String.fetchAll(
                db, sql: "SELECT peer FROM runtime_outbox WHERE method = ? ORDER BY peer",
                arguments: [YediRuntime.Revocations.Method.revokeUser.descriptor.fullName])
        }
        XCTAssertEqual(revocations, ["booking", "chat", "content"], "every service revokes the member")
        fixture.clock.advance(by: 1)
        _ = try await moderation.liftSuspension(.init(userID: "slp-bo"), options: op)

        let log = try await moderation.listOperatorActions(.init(), options: op)
        XCTAssertEqual(log.actions.map(\.action), ["lift-suspension", "suspend", "answer"])
        XCTAssertTrue(log.actions.allSatisfy { $0.operatorID == "slp-op" })
        XCTAssertEqual(log.actions[1].subject, "slp-bo")
        XCTAssertTrue(log.actions[1].detail.contains("욕설 신고 3회"))
        let otherLog = try await moderation.listOperatorActions(.init(), options: admin)
        XCTAssertEqual(otherLog.actions, [], "Housetainer's log holds none of SLP's actions")
    }

    /// A suspended member cannot sign in until the suspension is lifted (YeDi's password sign-in here).
    func testASuspendedMemberCannotSignInUntilLifted() async throws {
        _ = try await fixture.signUp(SampleAccounts.customer())
        let found = try await fixture.store.user(app: .yedi, email: "minji@example.com")
        let user = try XCTUnwrap(found)
        let store = SQLiteModerationStore(
            database: fixture.service.environment.database, revokedUsers: fixture.service.environment.revokedUsers,
            events: AccountEvents(outbox: fixture.service.environment.outbox))
        let now = fixture.clock.nowMilliseconds
        func action(_ name: String) -> OperatorActionRecord {
            OperatorActionRecord(
                id: "a-\(name)", app: .yedi, operatorID: "ops", action: name, subject: user.id, detail: "",
                atMilliseconds: now)
        }
        try await store.suspend(userID: user.id, app: .yedi, until: now + 60_000, by: action("suspend"))
        let signIn = YediAccount.SignInRequest(email: "minji@example.com", password: "hair2024!")
        let refused = await status { try await self.fixture.account.signIn(signIn) }
        XCTAssertEqual(refused, .permissionDenied)
        try await store.liftSuspension(userID: user.id, app: .yedi, by: action("lift"))
        let signedIn = try await fixture.account.signIn(signIn)
        XCTAssertEqual(signedIn.user?.id, user.id)
        do {
            try await store.suspend(userID: user.id, app: "slp", until: now + 60_000, by: action("cross"))
            XCTFail("suspended a member through another app")
        } catch {
            XCTAssertEqual(error as? AccountStoreError, .notFound)
        }
    }
}
