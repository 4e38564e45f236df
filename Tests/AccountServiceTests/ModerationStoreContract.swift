import Foundation
import Logging
import RPCAccess
import ServiceRuntime
import XCTest

@testable import AccountService

/// What every `ModerationStore` must do, written against the protocols only; the account store makes the
/// members the cases name (and deletes them).
enum ModerationStoreContract {
    typealias User = AccountStoreContract

    /// SLP members `a`, `b`, `c` and `op`, and YeDi's customer `y`, each with a session of their own.
    static func addUsers(_ accounts: any AccountStore) async throws {
        for id in ["a", "b", "c", "op"] {
            var member = User.user(id, role: "member")
            member.app = "slp"
            try await accounts.createUser(member, designer: nil, session: User.session("s-\(id)", user: id))
        }
        try await accounts.createUser(User.user("y"), designer: nil, session: User.session("s-y", user: "y"))
    }

    static func report(
        _ id: String, by writer: String, about reportee: String, reasons: [String] = ["1"], comment: String = "",
        app: AppID = "slp", at: Int64 = 1_000
    ) -> CaseRecord {
        CaseRecord(
            id: id, app: app, kind: .report, writerID: writer, reporteeID: reportee, reasons: reasons,
            title: reasons.first ?? "", content: comment, createdAtMilliseconds: at)
    }

    static func inquiry(_ id: String, by writer: String, app: AppID = "slp", at: Int64 = 1_000) -> CaseRecord {
        CaseRecord(
            id: id, app: app, kind: .inquiry, writerID: writer, reasons: [], title: "문의 \(id)", content: "내용",
            createdAtMilliseconds: at)
    }

    static func action(_ id: String, _ name: String, subject: String, app: AppID = "slp", at: Int64 = 2_000)
        -> OperatorActionRecord
    {
        OperatorActionRecord(
            id: id, app: app, operatorID: "op", action: name, subject: subject, detail: "", atMilliseconds: at)
    }

    static let quota = Quota(name: "cases.day", limit: 2, counted: "reports and inquiries a day")

    /// A report counts once per reporter and reportee: a second one answers the first's id, and replaces
    /// its reasons and comment only when asked to; reportees of another app, or nobody, are not found.
    static func reportsCountOncePerReporterAndStayInTheirApp(
        _ accounts: any AccountStore, _ store: any ModerationStore
    ) async throws {
        try await addUsers(accounts)
        let first = try await store.report(
            report("r1", by: "a", about: "b", reasons: ["1", "2"], comment: "노쇼"), quota: quota,
            replacingEarlier: false)
        XCTAssertEqual(first.id, "r1")
        XCTAssertTrue(first.counted)
        let kept = try await store.report(
            report("r2", by: "a", about: "b", reasons: ["3"], comment: "다시"), quota: quota, replacingEarlier: false)
        XCTAssertEqual(kept.id, "r1", "one report per reporter and reportee")
        XCTAssertFalse(kept.counted)
        var mine = try await store.cases(writerID: "a", app: "slp", after: nil, limit: 10)
        XCTAssertEqual(mine.map(\.reasons), [["1", "2"]], "the first report stands")
        XCTAssertEqual(mine.map(\.content), ["노쇼"])
        let replaced = try await store.report(
            report("r3", by: "a", about: "b", reasons: ["3"], at: 5_000), quota: quota, replacingEarlier: true)
        XCTAssertEqual(replaced.id, "r1")
        XCTAssertFalse(replaced.counted)
        mine = try await store.cases(writerID: "a", app: "slp", after: nil, limit: 10)
        XCTAssertEqual(mine.map(\.reasons), [["3"]], "a second report replaces the first")
        XCTAssertEqual(mine.map(\.content), [""])
        XCTAssertEqual(mine.map(\.createdAtMilliseconds), [1_000], "its time stays")

        let other = try await store.report(report("r4", by: "c", about: "b"), quota: nil, replacingEarlier: false)
        XCTAssertTrue(other.counted)
        let reporters = try await store.reporterCount(of: "b", app: "slp")
        let elsewhere = try await store.reporterCount(of: "b", app: .yedi)
        XCTAssertEqual(reporters, 2, "distinct reporters")
        XCTAssertEqual(elsewhere, 0)
        for (reportee, why) in [("y", "a member of another app"), ("nobody", "nobody")] {
            await assertRefused(AccountStoreError.notFound, "reported \(why)") {
                _ = try await store.report(
                    report("r-\(reportee)", by: "a", about: reportee), quota: nil, replacingEarlier: false)
            }
        }
    }

    /// The daily quota counts a writer's reports and inquiries; a repeated report adds no case, so it is
    /// answered even at the limit; the next day has room again.
    static func theDailyQuotaCountsReportsAndInquiries(
        _ accounts: any AccountStore, _ store: any ModerationStore
    ) async throws {
        try await addUsers(accounts)
        _ = try await store.report(report("r1", by: "a", about: "b"), quota: quota, replacingEarlier: false)
        try await store.submitInquiry(inquiry("q1", by: "a"), quota: quota)
        await assertRefused(QuotaExceeded(quota: quota), "a third case in one day") {
            try await store.submitInquiry(inquiry("q2", by: "a"), quota: quota)
        }
        await assertRefused(QuotaExceeded(quota: quota), "a third case in one day") {
            _ = try await store.report(report("r2", by: "a", about: "c"), quota: quota, replacingEarlier: false)
        }
        let repeated = try await store.report(report("r3", by: "a", about: "b"), quota: quota, replacingEarlier: true)
        XCTAssertEqual(repeated.id, "r1", "a replacement is not counted")
        let others = try await store.report(report("r4", by: "c", about: "b"), quota: quota, replacingEarlier: false)
        XCTAssertTrue(others.counted, "the quota is the writer's own")
        try await store.submitInquiry(inquiry("q3", by: "a", at: 1_000 + 86_400_000), quota: quota)
        let mine = try await store.cases(writerID: "a", app: "slp", after: nil, limit: 10)
        XCTAssertEqual(mine.map(\.id), ["q3", "r1", "q1"], "newest first, ties by id")
    }

    /// Cases list newest first, page by (time, id), filter by kind and answer; an answer is given once and
    /// logged; a case of another app, or none, is not found.
    static func casesPageAndAreAnsweredOnce(_ accounts: any AccountStore, _ store: any ModerationStore) async throws {
        try await addUsers(accounts)
        _ = try await store.report(report("r1", by: "a", about: "b", at: 1), quota: nil, replacingEarlier: false)
        try await store.submitInquiry(inquiry("q1", by: "a", at: 2), quota: nil)
        try await store.submitInquiry(inquiry("q2", by: "c", at: 2), quota: nil)
        try await store.submitInquiry(inquiry("q3", by: "y", app: .yedi, at: 3), quota: nil)
        let all = try await store.cases(CaseFilter(kind: nil, unansweredOnly: false), app: "slp", after: nil, limit: 10)
        XCTAssertEqual(all.map(\.id), ["q2", "q1", "r1"], "newest first, ties by id, only the app's")
        let next = try await store.cases(
            CaseFilter(kind: nil, unansweredOnly: false), app: "slp", after: PagePosition(key: 2, id: "q2"), limit: 1)
        XCTAssertEqual(next.map(\.id), ["q1"])
        let reports = try await store.cases(
            CaseFilter(kind: .report, unansweredOnly: false), app: "slp", after: nil, limit: 10)
        XCTAssertEqual(reports.map(\.id), ["r1"])
        XCTAssertEqual(reports.first?.reporteeID, "b")

        let answered = try await store.answer(
            caseID: "q1", app: "slp", answer: "곧 됩니다", by: action("x1", "answer", subject: "q1"))
        XCTAssertEqual(answered.answer, "곧 됩니다")
        XCTAssertEqual(answered.answeredBy, "op")
        XCTAssertEqual(answered.answeredAtMilliseconds, 2_000)
        await assertRefused(ModerationStoreError.alreadyAnswered, "answered twice") {
            _ = try await store.answer(
                caseID: "q1", app: "slp", answer: "다시", by: action("x2", "answer", subject: "q1"))
        }
        let elsewhere: [(caseID: String, app: AppID)] = [("q3", "slp"), ("none", "slp"), ("q1", .yedi)]
        for (caseID, app) in elsewhere {
            await assertRefused(AccountStoreError.notFound, "answered \(caseID) through \(app)") {
                _ = try await store.answer(
                    caseID: caseID, app: app, answer: "?", by: action("x3", "answer", subject: caseID))
            }
        }
        let open = try await store.cases(CaseFilter(kind: nil, unansweredOnly: true), app: "slp", after: nil, limit: 10)
        XCTAssertEqual(open.map(\.id), ["q2", "r1"])
        let seenByWriter = try await store.cases(writerID: "a", app: "slp", after: nil, limit: 10)
        XCTAssertEqual(seenByWriter.first?.answer, "곧 됩니다")
        let log = try await store.operatorActions(app: "slp", after: nil, limit: 10)
        XCTAssertEqual(log.map(\.id), ["x1"], "only the answer given is logged")
    }

    /// A suspension is kept on the member's row and ends every session of theirs; lifting it clears it;
    /// both are logged, and a member of another app is not found.
    static func suspensionEndsTheSessionsAndIsLogged(_ accounts: any AccountStore, _ store: any ModerationStore)
        async throws
    {
        try await addUsers(accounts)
        try await store.suspend(userID: "b", app: "slp", until: 9_000, by: action("x1", "suspend", subject: "b"))
        let suspended = try await accounts.user(id: "b")
        XCTAssertEqual(suspended?.suspendedUntilMilliseconds, 9_000)
        let rotation = try await accounts.rotateSession(
            refreshHash: Array("hash-s-b".utf8), next: User.session("s-b2", user: ""), now: 10)
        XCTAssertEqual(rotation, .unknown, "the member's sessions ended")
        let bystander = try await accounts.rotateSession(
            refreshHash: Array("hash-s-c".utf8), next: User.session("s-c2", user: ""), now: 10)
        XCTAssertEqual(bystander, .rotated(userID: "c", familyID: "s-c"))
        await assertRefused(AccountStoreError.notFound, "suspended through another app") {
            try await store.suspend(userID: "y", app: "slp", until: 9_000, by: action("x2", "suspend", subject: "y"))
        }
        await assertRefused(AccountStoreError.notFound, "lifted through another app") {
            try await store.liftSuspension(userID: "b", app: .yedi, by: action("x3", "lift-suspension", subject: "b"))
        }
        try await store.liftSuspension(
            userID: "b", app: "slp", by: action("x4", "lift-suspension", subject: "b", at: 3_000))
        let lifted = try await accounts.user(id: "b")
        XCTAssertNil(lifted?.suspendedUntilMilliseconds)
        let log = try await store.operatorActions(app: "slp", after: nil, limit: 10)
        XCTAssertEqual(log.map(\.action), ["lift-suspension", "suspend"])
        let none = try await store.operatorActions(app: .yedi, after: nil, limit: 10)
        XCTAssertEqual(none, [])
    }

    /// Another service's action is logged once per id; the log pages newest first and outlives the
    /// accounts, while a deleted member's own cases go with them.
    static func theLogKeepsOtherServicesActionsOnceAndOutlivesDeletion(
        _ accounts: any AccountStore, _ store: any ModerationStore
    ) async throws {
        try await addUsers(accounts)
        let hidden = action("content-1", "hide-post", subject: "p1", at: 10)
        let first = try await store.recordOperatorAction(hidden)
        let again = try await store.recordOperatorAction(hidden)
        XCTAssertEqual([first, again], [true, false], "a repeated delivery is logged once")
        _ = try await store.recordOperatorAction(action("content-2", "feature-post", subject: "p2", at: 20))
        _ = try await store.recordOperatorAction(action("content-3", "hide-post", subject: "p3", at: 20))
        let page = try await store.operatorActions(app: "slp", after: nil, limit: 2)
        XCTAssertEqual(page.map(\.id), ["content-3", "content-2"])
        let rest = try await store.operatorActions(app: "slp", after: PagePosition(key: 20, id: "content-2"), limit: 2)
        XCTAssertEqual(rest.map(\.id), ["content-1"])

        _ = try await store.report(report("r1", by: "a", about: "b"), quota: nil, replacingEarlier: false)
        _ = try await store.report(report("r2", by: "c", about: "a"), quota: nil, replacingEarlier: false)
        try await store.submitInquiry(inquiry("q1", by: "a"), quota: nil)
        try await store.suspend(userID: "a", app: "slp", until: 9_000, by: action("x1", "suspend", subject: "a"))
        let deleted = try await accounts.deleteAccount(userID: "a", now: 30)
        XCTAssertTrue(deleted)
        let cases = try await store.cases(
            CaseFilter(kind: nil, unansweredOnly: false), app: "slp", after: nil, limit: 10)
        XCTAssertEqual(cases, [], "the deleted member's reports, inquiries and the reports about them went")
        let reporters = try await store.reporterCount(of: "b", app: "slp")
        XCTAssertEqual(reporters, 0)
        let log = try await store.operatorActions(app: "slp", after: nil, limit: 10)
        XCTAssertEqual(log.count, 4, "the log stays")
    }

    static func assertRefused<Failure: Error & Equatable>(
        _ expected: Failure, _ message: String, _ write: () async throws -> Void,
        file: StaticString = #filePath, line: UInt = #line
    ) async {
        do {
            try await write()
            XCTFail(message, file: file, line: line)
        } catch {
            XCTAssertEqual(error as? Failure, expected, "\(error)", file: file, line: line)
        }
    }
}

// MARK: Replicas: several stores on one database, as several processes have

extension ModerationStoreContract {
    /// One reporter's report about one member sent to two replicas at once (no quota, so no lock): one is
    /// counted, both answer its id, and the member has one more reporter; never a unique violation.
    static func theSameReportOnTwoReplicasAtOnceCountsOnce(
        _ accounts: any AccountStore, _ stores: [any ModerationStore]
    )
        async throws
    {
        try await addUsers(accounts)
        let (mine, other) = (stores[0], stores[1])
        for round in 0..<10 {
            let reporter = "r\(round)"
            var member = User.user(reporter, role: "member")
            member.app = "slp"
            try await accounts.createUser(member, designer: nil, session: User.session("s-\(reporter)", user: reporter))
            async let here = mine.report(
                report("\(reporter)-a", by: reporter, about: "b"), quota: nil, replacingEarlier: true)
            async let there = other.report(
                report("\(reporter)-b", by: reporter, about: "b", reasons: ["2"]), quota: nil, replacingEarlier: true)
            let outcomes = try await [here, there]
            XCTAssertEqual(outcomes.filter(\.counted).count, 1, "\(outcomes)")
            XCTAssertEqual(Set(outcomes.map(\.id)).count, 1, "\(outcomes)")
            let reporters = try await mine.reporterCount(of: "b", app: "slp")
            XCTAssertEqual(reporters, round + 1)
        }
    }

    /// Ten reports by one writer about ten members, at once over the replicas, with a quota of three a
    /// day: exactly three are stored.
    static func aWritersQuotaHoldsAcrossReplicas(_ accounts: any AccountStore, _ stores: [any ModerationStore])
        async throws
    {
        try await addUsers(accounts)
        for index in 0..<10 {
            var member = User.user("m\(index)", role: "member")
            member.app = "slp"
            try await accounts.createUser(
                member, designer: nil, session: User.session("s-m\(index)", user: "m\(index)"))
        }
        let quota = Quota(name: "cases.day", limit: 3, counted: "reports and inquiries a day")
        let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<10 {
                group.addTask {
                    do {
                        return try await stores[index % stores.count].report(
                            report("c\(index)", by: "a", about: "m\(index)"), quota: quota, replacingEarlier: false
                        ).counted
                    } catch is QuotaExceeded {
                        return false
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(outcomes.filter { $0 }.count, 3)
        let stored = try await stores[1].cases(writerID: "a", app: "slp", after: nil, limit: 100)
        XCTAssertEqual(stored.count, 3)
    }

    /// Two operators answer one case at once, on two replicas: one answer, one `alreadyAnswered`, one line
    /// in the log.
    static func twoAnswersOnTwoReplicasAtOnceAnswerOnce(_ accounts: any AccountStore, _ stores: [any ModerationStore])
        async throws
    {
        try await addUsers(accounts)
        let (mine, other) = (stores[0], stores[1])
        for round in 0..<10 {
            try await mine.submitInquiry(inquiry("q\(round)", by: "a"), quota: nil)
            func answer(_ store: any ModerationStore, _ by: String) async throws -> Bool {
                do {
                    _ = try await store.answer(
                        caseID: "q\(round)", app: "slp", answer: by,
                        by: action("\(by)-\(round)", "answer", subject: "q\(round)"))
                    return true
                } catch ModerationStoreError.alreadyAnswered {
                    return false
                }
            }
            async let here = answer(mine, "x")
            async let there = answer(other, "y")
            let answered = try await [here, there]
            XCTAssertEqual(answered.filter { $0 }.count, 1)
        }
        let logged = try await mine.operatorActions(app: "slp", after: nil, limit: 100).filter { $0.action == "answer" }
        XCTAssertEqual(logged.count, 10)
        XCTAssertEqual(Set(logged.map(\.subject)).count, 10, "one line a case")
    }
}

/// The contract on SQLite.
final class SQLiteModerationStoreTests: XCTestCase {
    private var database: ServiceDatabase!
    private var accounts: SQLiteAccountStore!
    private var store: SQLiteModerationStore!
    private let clock = ManualClock()

    override func setUp() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-moderation-store-\(UUID().uuidString)").path
        database = try ServiceDatabase.open(
            directory: directory, name: "account", migrations: AccountServiceDefinition.migrate,
            logger: Logger(label: "test"))
        let outbox = Outbox(ids: SequentialIDGenerator(prefix: "job"), clock: clock)
        let revokedUsers = try await RevokedUsers(database: database, clock: clock)
        accounts = SQLiteAccountStore(
            database: database, events: AccountEvents(outbox: outbox), revokedUsers: revokedUsers)
        store = SQLiteModerationStore(
            database: database, revokedUsers: revokedUsers, events: AccountEvents(outbox: outbox))
        addTeardownBlock { [database] in
            try? database?.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    func testReportsCountOncePerReporterAndStayInTheirApp() async throws {
        try await ModerationStoreContract.reportsCountOncePerReporterAndStayInTheirApp(accounts, store)
    }

    func testTheDailyQuotaCountsReportsAndInquiries() async throws {
        try await ModerationStoreContract.theDailyQuotaCountsReportsAndInquiries(accounts, store)
    }

    func testCasesPageAndAreAnsweredOnce() async throws {
        try await ModerationStoreContract.casesPageAndAreAnsweredOnce(accounts, store)
    }

    func testSuspensionEndsTheSessionsAndIsLogged() async throws {
        try await ModerationStoreContract.suspensionEndsTheSessionsAndIsLogged(accounts, store)
        XCTAssertTrue(
            store.revokedUsers.isRevoked(userID: "b", issuedAt: Date(timeIntervalSince1970: 1)),
            "the member's tokens are refused here at once")
    }

    func testTheLogKeepsOtherServicesActionsOnceAndOutlivesDeletion() async throws {
        try await ModerationStoreContract.theLogKeepsOtherServicesActionsOnceAndOutlivesDeletion(accounts, store)
    }

    /// Two stores on the database, as two replicas would have (SQLite has one writer: they take turns):
    /// their own outbox ids and revocations.
    private func replicas() async throws -> [any ModerationStore] {
        [
            store!,
            SQLiteModerationStore(
                database: database, revokedUsers: try await RevokedUsers(database: database, clock: clock),
                events: AccountEvents(outbox: Outbox(ids: SequentialIDGenerator(prefix: "job-b-"), clock: clock))),
        ]
    }

    func testTheSameReportOnTwoReplicasAtOnceCountsOnce() async throws {
        try await ModerationStoreContract.theSameReportOnTwoReplicasAtOnceCountsOnce(accounts, try await replicas())
    }

    func testAWritersQuotaHoldsAcrossReplicas() async throws {
        try await ModerationStoreContract.aWritersQuotaHoldsAcrossReplicas(accounts, try await replicas())
    }

    func testTwoAnswersOnTwoReplicasAtOnceAnswerOnce() async throws {
        try await ModerationStoreContract.twoAnswersOnTwoReplicasAtOnceAnswerOnce(accounts, try await replicas())
    }
}
