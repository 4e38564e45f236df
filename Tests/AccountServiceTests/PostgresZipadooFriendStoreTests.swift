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

    /// A asks B while B asks A, on two replicas at once, for ten pairs: one request each, the other
    /// answered `theyRequested` as the second of two serial calls is, and one row per pair.
    func testCrossingRequestsOnTwoReplicasLeaveOneRequest() async throws {
        try await withSecondReplica { other in
            let stores = [try XCTUnwrap(store), other]
            for round in 0..<10 {
                for id in ["a\(round)", "b\(round)"] { try await ZipadooFriendStoreContract.member(id, stores[0]) }
                let outcomes = await withTaskGroup(of: String.self) { group in
                    for (index, (from, to)) in [("a\(round)", "b\(round)"), ("b\(round)", "a\(round)")].enumerated() {
                        group.addTask {
                            do {
                                return try await stores[index].request(from: from, nickname: "nick\(to)", now: 1)
                            } catch {
                                return "\(error)"
                            }
                        }
                    }
                    return await group.reduce(into: [String]()) { $0.append($1) }
                }
                XCTAssertEqual(outcomes.filter { $0.hasPrefix("a") || $0.hasPrefix("b") }.count, 1, "\(outcomes)")
                XCTAssertTrue(outcomes.contains("theyRequested"), "\(outcomes)")
                let requests = try await stores[1].requests(of: "a\(round)")
                XCTAssertEqual(requests.incoming.count + requests.outgoing.count, 1)
            }
            let rows = try await count("SELECT count(*) FROM zipadoo_friendship")
            XCTAssertEqual(rows, 10)
        }
    }

    /// The recipient accepts on one replica and declines on the other at once: one of them happens, the
    /// other is told what the first left (`alreadyFriends` or `noRequest`).
    func testAcceptAndDeclineOnTwoReplicasAtOnceDecideOnce() async throws {
        try await withSecondReplica { other in
            let stores = [try XCTUnwrap(store), other]
            for round in 0..<10 {
                let (asker, recipient) = ("a\(round)", "b\(round)")
                for id in [asker, recipient] { try await ZipadooFriendStoreContract.member(id, stores[0]) }
                _ = try await stores[0].request(from: asker, nickname: "nick\(recipient)", now: 1)
                let outcomes = await withTaskGroup(of: String.self) { group in
                    group.addTask {
                        do {
                            try await stores[0].accept(userID: recipient, requester: asker, now: 2)
                            return "accepted"
                        } catch {
                            return "\(error)"
                        }
                    }
                    group.addTask {
                        do {
                            try await stores[1].decline(userID: recipient, requester: asker)
                            return "declined"
                        } catch {
                            return "\(error)"
                        }
                    }
                    return await group.reduce(into: Set<String>()) { $0.insert($1) }
                }
                let friends = try await stores[1].friends(of: asker).map(\.userID)
                if outcomes.contains("accepted") {
                    XCTAssertEqual(outcomes, ["accepted", "alreadyFriends"])
                    XCTAssertEqual(friends, [recipient])
                } else {
                    XCTAssertEqual(outcomes, ["declined", "noRequest"])
                    XCTAssertEqual(friends, [])
                }
            }
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

    private func count(_ query: PostgresQuery) async throws -> Int {
        try await XCTUnwrap(database).postgres.snapshot { tx in try await tx.query(query).first?.decode(Int.self) ?? -1
        }
    }
}
