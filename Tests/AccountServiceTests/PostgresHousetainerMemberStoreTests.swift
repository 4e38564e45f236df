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

    /// One code redeemed by four signups at once, two on each replica, ten times. The addresses differ
    /// only in case (two providers' spellings of the invitee's address), so no other index stops the
    /// second account: only the claim's `status = 'S'` does.
    func testOneCodeRedeemedOnTwoReplicasAtOnceMakesOneAccount() async throws {
        try await withSecondReplica { other, otherAccounts in
            let (mine, myAccounts) = (try XCTUnwrap(store), try XCTUnwrap(accounts))
            try await HousetainerMemberStoreContract.account("host", myAccounts)
            let spellings = ["minji", "Minji", "MINJI", "mInji"]
            for round in 0..<10 {
                let code = String(10_000_000 + round)
                _ = try await HousetainerMemberStoreContract.invite(
                    mine,
                    HousetainerMemberStoreContract.invitation("i\(round)", from: "host", to: "minji\(round)@x.kr"),
                    code: code, quota: 100)
                let outcomes = await withTaskGroup(of: String.self) { group in
                    for (index, spelling) in spellings.enumerated() {
                        let (store, accounts) = index % 2 == 0 ? (mine, myAccounts) : (other, otherAccounts)
                        group.addTask {
                            do {
                                try await HousetainerMemberStoreContract.signUp(
                                    "m\(round)-\(index)", email: "\(spelling)\(round)@x.kr", code: code,
                                    nickname: "가\(round)나\(index)", store, accounts: accounts)
                                return "ok"
                            } catch {
                                return "\(error)"
                            }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                XCTAssertEqual(outcomes.filter { $0 == "ok" }.count, 1, "\(outcomes)")
                XCTAssertEqual(outcomes.filter { $0 == "codeUsed" }.count, 3, "\(outcomes)")
            }
            let members = try await count("SELECT count(*) FROM housetainer_member")
            XCTAssertEqual(members, 10)
            let buddies = try await mine.member(id: "host", app: HousetainerMemberStoreContract.app)?.buddies
            XCTAssertEqual(buddies?.count, 10, "one buddy per code")
        }
    }

    /// Twenty invitations from one member at once, half on each replica: exactly the quota's three.
    func testInvitationsOnTwoReplicasAtOnceStopAtTheQuota() async throws {
        try await withSecondReplica { other, _ in
            let mine = try XCTUnwrap(store)
            try await HousetainerMemberStoreContract.account("host", try XCTUnwrap(accounts))
            let stores = [mine, other]
            let made = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        do {
                            _ = try await HousetainerMemberStoreContract.invite(
                                stores[index % 2],
                                HousetainerMemberStoreContract.invitation(
                                    "i\(index)", from: "host", to: "guest\(index)@example.kr"),
                                code: String(20_000_000 + index))
                            return true
                        } catch HousetainerStoreError.quotaExceeded {
                            return false
                        }
                    }
                }
                return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            XCTAssertEqual(made, 3)
            let held = try await mine.invitations(inviterID: "host", app: HousetainerMemberStoreContract.app)
            XCTAssertEqual(held.count, 3)
        }
    }

    /// The same address joins the waitlist on both replicas at once: one entry, one "added".
    func testTheSameAddressJoiningTheWaitlistOnTwoReplicasAddsItOnce() async throws {
        try await withSecondReplica { other, _ in
            let stores = [try XCTUnwrap(store), other]
            for round in 0..<10 {
                let added = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for index in 0..<2 {
                        group.addTask {
                            try await stores[index].joinWaitlist(
                                WaitlistRecord(
                                    app: HousetainerMemberStoreContract.app, email: "w\(round)@example.kr",
                                    snsURL: "https://x.com", instagramID: "w\(index)", createdAtMilliseconds: 1,
                                    updatedAtMilliseconds: 1))
                        }
                    }
                    return try await group.reduce(into: [Bool]()) { $0.append($1) }
                }
                XCTAssertEqual(added.filter { $0 }.count, 1, "\(added)")
            }
            let entries = try await count("SELECT count(*) FROM housetainer_waitlist")
            XCTAssertEqual(entries, 10)
        }
    }

    // MARK: Helpers

    /// Runs `body` with a second replica's stores: its own pool on the same database.
    private func withSecondReplica(
        _ body: (PostgresHousetainerMemberStore, PostgresAccountStore) async throws -> Void
    ) async throws {
        try await XCTUnwrap(database).withSecondPool { postgres in
            let accounts = try await PostgresAccountStoreTests.store(on: postgres, replica: "b")
            try await body(PostgresHousetainerMemberStore(accounts: accounts, events: accounts.events), accounts)
        }
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        try await XCTUnwrap(database).postgres.snapshot { tx in try await tx.query(query).first?.decode(Int.self) ?? -1
        }
    }
}
