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

    /// The contract's replica checks with two stores on two pools of one database.
    func testTheSameReportOnTwoReplicasAtOnceCountsOnce() async throws {
        try await withSecondReplica { other in
            try await ModerationStoreContract.theSameReportOnTwoReplicasAtOnceCountsOnce(accounts, [store!, other])
        }
    }

    func testAWritersQuotaHoldsAcrossReplicas() async throws {
        try await withSecondReplica { other in
            try await ModerationStoreContract.aWritersQuotaHoldsAcrossReplicas(accounts, [store!, other])
        }
    }

    func testTwoAnswersOnTwoReplicasAtOnceAnswerOnce() async throws {
        try await withSecondReplica { other in
            try await ModerationStoreContract.twoAnswersOnTwoReplicasAtOnceAnswerOnce(accounts, [store!, other])
        }
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
