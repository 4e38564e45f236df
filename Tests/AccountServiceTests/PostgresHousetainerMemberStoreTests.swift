import Foundation
import PostgresNIO
import PostgresTestSupport
import RPCAccess
import ServiceRuntime
import XCTest
import YediProto

@testable import AccountService

/// The Housetainer contract against the PostgreSQL store, on a fresh database per test; then what needs
/// replicas: two pools on one database, as two processes have.
final class PostgresHousetainerMemberStoreTests: XCTestCase {
    /// Every version of the service: an account's deletion reaches every store's tables.
    static let migrations = AccountServiceDefinition.postgresMigrations ?? []

    private var database: TestDatabase?
    private var store: PostgresHousetainerMemberStore!
    private var accounts: PostgresAccountStore!

    override func setUp() async throws {
        let database = try await TestDatabase(service: "account", migrations: Self.migrations)
        self.database = database
        accounts = try await PostgresAccountStoreTests.store(on: database.postgres, replica: "a")
        store = PostgresHousetainerMemberStore(accounts: accounts, events: accounts.events)
    }

    override func tearDown() async throws {
        try await database?.close()
        database = nil
    }

    // MARK: The contract

    func testHousetainerQuotaCountsSentAndJoinedAndCollisionsDrawAgain() async throws {
        try await HousetainerMemberStoreContract.quotaCountsSentAndJoinedAndCollisionsDrawAgain(
            store, accounts: accounts)
        let mails = try await count("SELECT count(*) FROM runtime_outbox WHERE peer = 'mail'")
        XCTAssertEqual(mails, 4, "each invitation's mail is in the outbox, written by the same transaction")
    }

    func testHousetainerSignUpTurnsTheCodeJoinedOnceAndRecordsTheInviter() async throws {
        try await HousetainerMemberStoreContract.signUpTurnsTheCodeJoinedOnceAndRecordsTheInviter(
            store, accounts: accounts)
    }

    func testHousetainerSignInFindsTheIdentityOrTheAddressAndLinksIt() async throws {
        try await HousetainerMemberStoreContract.signInFindsTheIdentityOrTheAddressAndLinksIt(store, accounts: accounts)
    }

    func testHousetainerWaitlistKeepsOneEntryPerAddressNewestFirst() async throws {
        try await HousetainerMemberStoreContract.waitlistKeepsOneEntryPerAddressNewestFirst(store, accounts: accounts)
    }

    func testHousetainerDeletingAMemberFreesTheSlotAndForgetsTheirAddress() async throws {
        try await HousetainerMemberStoreContract.deletingAMemberFreesTheSlotAndForgetsTheirAddress(
            store, accounts: accounts)
    }

    func testHousetainerAnIssuedCodeHasNoInviterNorQuotaAndSignsUpAFounder() async throws {
        try await HousetainerMemberStoreContract.anIssuedCodeHasNoInviterNorQuotaAndSignsUpAFounder(
            store, accounts: accounts)
    }

    func testHousetainerSetMemberTypeChangesOnlyThatMembersType() async throws {
        try await HousetainerMemberStoreContract.setMemberTypeChangesOnlyThatMembersType(store, accounts: accounts)
        let told = try await count("SELECT count(*) FROM runtime_outbox WHERE method LIKE '%UserChanged'")
        XCTAssertEqual(told, 2 * 2, "each change of type tells the two directories, in the same transaction")
        let types = try await accounts.memberTypes(userIDs: ["a", "host", "nobody"])
        XCTAssertEqual(types, ["a": "h"], "the account store reads this table (a founder made by hand has no row)")
    }

    // MARK: Two replicas on one database

    /// The contract's replica checks with two replicas' stores on two pools of one database.
    func testOneCodeRedeemedOnTwoReplicasAtOnceMakesOneAccount() async throws {
        try await withReplicas {
            try await HousetainerMemberStoreContract.oneCodeRedeemedOnTwoReplicasAtOnceMakesOneAccount($0, accounts: $1)
        }
    }

    func testInvitationsOnTwoReplicasAtOnceStopAtTheQuota() async throws {
        try await withReplicas {
            try await HousetainerMemberStoreContract.invitationsOnTwoReplicasAtOnceStopAtTheQuota($0, accounts: $1)
        }
    }

    func testTheSameAddressJoiningTheWaitlistOnTwoReplicasAddsItOnce() async throws {
        try await withReplicas {
            try await HousetainerMemberStoreContract.theSameAddressJoiningTheWaitlistOnTwoReplicasAddsItOnce(
                $0, accounts: $1)
        }
    }

    // MARK: Helpers

    /// Runs `body` with this test's stores and a second replica's, on its own pool of the same database.
    private func withReplicas(
        _ body: ([any HousetainerMemberStore], [any AccountStore]) async throws -> Void
    ) async throws {
        try await XCTUnwrap(database).withSecondPool { postgres in
            let other = try await PostgresAccountStoreTests.store(on: postgres, replica: "b")
            try await body(
                [store!, PostgresHousetainerMemberStore(accounts: other, events: other.events)], [accounts!, other])
        }
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        try await XCTUnwrap(database).postgres.snapshot { tx in try await tx.query(query).first?.decode(Int.self) ?? -1
        }
    }
}
