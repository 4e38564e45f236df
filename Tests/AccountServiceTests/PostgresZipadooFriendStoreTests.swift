import Foundation
import PostgresNIO
import PostgresTestSupport
import ServiceRuntime
import XCTest

@testable import AccountService

/// The Zipadoo friends contract against the PostgreSQL store, on a fresh database per test; then what
/// needs replicas: two pools on one database, as two processes have.
final class PostgresZipadooFriendStoreTests: XCTestCase {
    private var database: TestDatabase?
    private var store: PostgresZipadooFriendStore!

    override func setUp() async throws {
        let database = try await TestDatabase(
            service: "account", migrations: PostgresHousetainerMemberStoreTests.migrations)
        self.database = database
        store = PostgresZipadooFriendStore(
            accounts: try await PostgresAccountStoreTests.store(on: database.postgres, replica: "a"))
    }

    override func tearDown() async throws {
        try await database?.close()
        database = nil
    }

    // MARK: The contract

    func testZipadooRequestsRefuseInTheDomainsOrderAndOneRowPerPair() async throws {
        try await ZipadooFriendStoreContract.zipadooRequestsRefuseInTheDomainsOrderAndOneRowPerPair(store)
    }

    func testZipadooSignUpRefusesTakenEmailAndNicknameByIndex() async throws {
        try await ZipadooFriendStoreContract.zipadooSignUpRefusesTakenEmailAndNicknameByIndex(store)
    }

    /// Ids whose byte order differs from a linguistic one ("Z" < "a") still make one row per pair, and the
    /// lists come in SQLite's byte order, whatever the database's collation.
    func testZipadooPairsAndListsFollowByteOrder() async throws {
        for id in ["a", "Z", "b"] { try await ZipadooFriendStoreContract.member(id, store) }
        _ = try await store.request(from: "a", nickname: "nickZ", now: 1)
        _ = try await store.request(from: "b", nickname: "nicka", now: 2)
        try await store.accept(userID: "Z", requester: "a", now: 3)
        try await store.accept(userID: "a", requester: "b", now: 4)
        let friends = try await store.friends(of: "a").map(\.nickname)
        XCTAssertEqual(friends, ["nickZ", "nickb"])
        let profile = try await store.updateProfile(
            userID: "a", imageID: "img", nickname: "새이름", phone: "01012345678", mole: "doo9")
        XCTAssertEqual(profile.member.mole, "doo9")
        XCTAssertEqual(profile.member.nickname, "새이름")
    }

    // MARK: Two replicas on one database

    /// The contract's replica checks with two stores on two pools of one database.
    func testCrossingRequestsOnTwoReplicasLeaveOneRequest() async throws {
        try await withSecondReplica { other in
            try await ZipadooFriendStoreContract.crossingRequestsOnTwoReplicasLeaveOneRequest([store!, other])
        }
    }

    func testAcceptAndDeclineOnTwoReplicasAtOnceDecideOnce() async throws {
        try await withSecondReplica { other in
            try await ZipadooFriendStoreContract.acceptAndDeclineOnTwoReplicasAtOnceDecideOnce([store!, other])
        }
    }

    // MARK: Helpers

    /// Runs `body` with a second replica's store: its own pool on the same database.
    private func withSecondReplica(_ body: (PostgresZipadooFriendStore) async throws -> Void) async throws {
        try await XCTUnwrap(database).withSecondPool { postgres in
            try await body(
                PostgresZipadooFriendStore(
                    accounts: try await PostgresAccountStoreTests.store(on: postgres, replica: "b")))
        }
    }
}
