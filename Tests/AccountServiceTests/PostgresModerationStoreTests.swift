import Foundation
import GRDB
import PostgresNIO
import PostgresTestSupport
import RPCAccess
import ServiceRuntime
import XCTest

@testable import AccountService

/// The moderation contract against the PostgreSQL store, on a fresh database of its own per test; then
/// what needs replicas: two pools on one database, as two processes have.
final class PostgresModerationStoreTests: XCTestCase {
    /// Every version of the service: an account's deletion reaches every store's tables.
    static let migrations = AccountServiceDefinition.postgresMigrations ?? []

    private var database: TestDatabase?
    private var accounts: PostgresAccountStore!
    private var store: PostgresModerationStore!

    override func setUp() async throws {
        let database = try await TestDatabase(service: "account", migrations: Self.migrations)
        self.database = database
        accounts = try await PostgresAccountStoreTests.store(on: database.postgres, replica: "a")
        store = Self.store(beside: accounts)
    }

    override func tearDown() async throws {
        try await database?.close()
        database = nil
    }

    /// A replica's moderation store: its account store's database, outbox and revocations.
    static func store(beside accounts: PostgresAccountStore) -> PostgresModerationStore {
        PostgresModerationStore(
            postgres: accounts.postgres, revokedUsers: accounts.revokedUsers, events: accounts.events)
    }

    func testTheVersionIsNamedAsOnSQLite() {
        var migrator = DatabaseMigrator()
        ModerationSchema.migrate(&migrator)
        XCTAssertEqual(ModerationPostgresSchema.migrations.map(\.name), migrator.migrations)
    }

    // MARK: The contract

    func testReportsCountOncePerReporterAndStayInTheirApp() async throws {
        try await ModerationStoreContract.reportsCountOncePerReporterAndStayInTheirApp(accounts, store)
    }

    func testTheDailyQuotaCountsReportsAndInquiries() async throws {
        try await ModerationStoreContract.theDailyQuotaCountsReportsAndInquiries(accounts, store)
    }

    func testCasesPageAndAreAnsweredOnce() async throws {
        try await ModerationStoreContract.casesPageAndAreAnsweredOnce(accounts, store)
    }

    /// And what only the engine shows: the revocation in the table, in memory, and in the outbox for the
    /// three peers, all written by the suspending transaction.
    func testSuspensionEndsTheSessionsAndIsLogged() async throws {
        try await ModerationStoreContract.suspensionEndsTheSessionsAndIsLogged(accounts, store)
        XCTAssertTrue(
            store.revokedUsers.isRevoked(userID: "b", issuedAt: Date(timeIntervalSince1970: 1)),
            "the member's tokens are refused here at once")
        let revoked = try await count("SELECT count(*) FROM runtime_revoked_user")
        XCTAssertEqual(revoked, 1)
        let told = try await count("SELECT count(*) FROM runtime_outbox WHERE method LIKE '%RevokeUser'")
        XCTAssertEqual(told, 3, "booking, chat and content revoke the member")
    }

    func testTheLogKeepsOtherServicesActionsOnceAndOutlivesDeletion() async throws {
        try await ModerationStoreContract.theLogKeepsOtherServicesActionsOnceAndOutlivesDeletion(accounts, store)
    }

    // MARK: Two replicas on one database

    /// One reporter's report about one member sent to two replicas at once (no quota, so no lock): one is
    /// counted, both answer its id, and the member has one more reporter; never a unique violation.
    func testTheSameReportOnTwoReplicasAtOnceCountsOnce() async throws {
        try await ModerationStoreContract.addUsers(accounts)
        try await withSecondReplica { other in
            let mine = try XCTUnwrap(store)
            for round in 0..<10 {
                let reporter = "r\(round)"
                var member = AccountStoreContract.user(reporter, role: "member")
                member.app = "slp"
                try await accounts.createUser(
                    member, designer: nil, session: AccountStoreContract.session("s-\(reporter)", user: reporter))
                async let here = mine.report(
                    ModerationStoreContract.report("\(reporter)-a", by: reporter, about: "b"), quota: nil,
                    replacingEarlier: true)
                async let there = other.report(
                    ModerationStoreContract.report("\(reporter)-b", by: reporter, about: "b", reasons: ["2"]),
                    quota: nil, replacingEarlier: true)
                let outcomes = try await [here, there]
                XCTAssertEqual(outcomes.filter(\.counted).count, 1, "\(outcomes)")
                XCTAssertEqual(Set(outcomes.map(\.id)).count, 1, "\(outcomes)")
                let reporters = try await mine.reporterCount(of: "b", app: "slp")
                XCTAssertEqual(reporters, round + 1)
            }
        }
    }

    /// Ten reports by one writer about ten members, at once over two replicas, with a quota of three a
    /// day: exactly three are stored.
    func testAWritersQuotaHoldsAcrossReplicas() async throws {
        try await ModerationStoreContract.addUsers(accounts)
        for index in 0..<10 {
            var member = AccountStoreContract.user("m\(index)", role: "member")
            member.app = "slp"
            try await accounts.createUser(
                member, designer: nil, session: AccountStoreContract.session("s-m\(index)", user: "m\(index)"))
        }
        let quota = Quota(name: "cases.day", limit: 3, counted: "reports and inquiries a day")
        try await withSecondReplica { other in
            let stores = [store!, other]
            let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        do {
                            return try await stores[index % 2].report(
                                ModerationStoreContract.report("c\(index)", by: "a", about: "m\(index)"), quota: quota,
                                replacingEarlier: false
                            ).counted
                        } catch is QuotaExceeded {
                            return false
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertEqual(outcomes.filter { $0 }.count, 3)
        }
        let stored = try await count("SELECT count(*) FROM moderation_case WHERE writer_id = 'a'")
        XCTAssertEqual(stored, 3)
    }

    /// Two operators answer one case at once, on two replicas: one answer, one `alreadyAnswered`, one line
    /// in the log.
    func testTwoAnswersOnTwoReplicasAtOnceAnswerOnce() async throws {
        try await ModerationStoreContract.addUsers(accounts)
        try await withSecondReplica { other in
            let mine = try XCTUnwrap(store)
            for round in 0..<10 {
                try await mine.submitInquiry(ModerationStoreContract.inquiry("q\(round)", by: "a"), quota: nil)
                func answer(_ store: PostgresModerationStore, _ by: String) async throws -> Bool {
                    do {
                        _ = try await store.answer(
                            caseID: "q\(round)", app: "slp", answer: by,
                            by: ModerationStoreContract.action("\(by)-\(round)", "answer", subject: "q\(round)"))
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
        }
        let logged = try await count("SELECT count(*) FROM operator_action WHERE action = 'answer'")
        XCTAssertEqual(logged, 10)
    }

    /// A report about a member whose account a replica is deleting at that moment is stored before the
    /// deletion (which then takes it) or answered `notFound` after it: never a broken foreign key.
    func testAReportAboutAMemberBeingDeletedIsNotFoundNotAnError() async throws {
        try await ModerationStoreContract.addUsers(accounts)
        let accounts = try XCTUnwrap(accounts)
        try await withSecondReplica { other in
            for round in 0..<10 {
                let id = "gone-\(round)"
                var member = AccountStoreContract.user(id, role: "member")
                member.app = "slp"
                try await accounts.createUser(
                    member, designer: nil, session: AccountStoreContract.session("s-\(id)", user: id))
                async let deleted = accounts.deleteAccount(userID: id, now: 5)
                async let reported: Void = {
                    do {
                        _ = try await other.report(
                            ModerationStoreContract.report("c-\(id)", by: "a", about: id), quota: nil,
                            replacingEarlier: false)
                    } catch AccountStoreError.notFound {}
                }()
                let (wasDeleted, _) = try await (deleted, reported)
                XCTAssertTrue(wasDeleted)
            }
        }
        let left = try await count("SELECT count(*) FROM moderation_case")
        XCTAssertEqual(left, 0, "every report went with its member")
    }

    // MARK: Helpers

    /// Runs `body` with a second replica's store: its own pool on the same database.
    private func withSecondReplica(_ body: (PostgresModerationStore) async throws -> Void) async throws {
        try await XCTUnwrap(database).withSecondPool { postgres in
            try await body(Self.store(beside: try await PostgresAccountStoreTests.store(on: postgres, replica: "b")))
        }
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        try await XCTUnwrap(database).postgres.snapshot { tx in try await tx.query(query).first?.decode(Int.self) ?? -1
        }
    }
}
