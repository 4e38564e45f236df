import Foundation
import RPCAccess
import ServiceRuntime
import XCTest

@testable import AccountService

/// What every `ZipadooFriendStore` must do, against the protocol only (members are made through the
/// account store, which owns them); `SQLiteZipadooFriendStoreTests` runs it on SQLite.
enum ZipadooFriendStoreContract {
    static let now: Int64 = 1_790_000_000_000

    /// A Zipadoo member `id` with nickname `nick<id>`.
    static func member(_ id: String, _ store: any ZipadooFriendStore) async throws {
        var user = AccountStoreContract.user(id, role: "member")
        user.app = "zipadoo"
        user.email = "\(id)@example.com"
        user.nickname = "nick\(id)"
        try await store.signUp(user, mole: "doo3", session: AccountStoreContract.session("s-\(id)", user: id))
    }

    static func refusal(_ call: () async throws -> some Any) async -> ZipadooFriendError? {
        do {
            _ = try await call()
            return nil
        } catch let error as ZipadooFriendError {
            return error
        } catch {
            XCTFail("unexpected \(error)")
            return nil
        }
    }

    static func zipadooRequestsRefuseInTheDomainsOrderAndOneRowPerPair(_ store: any ZipadooFriendStore) async throws {
        for id in ["a", "b", "c"] { try await member(id, store) }
        var refused = await refusal { try await store.request(from: "a", nickname: "nobody", now: now) }
        XCTAssertEqual(refused, .noSuchNickname)
        refused = await refusal { try await store.request(from: "a", nickname: "nicka", now: now) }
        XCTAssertEqual(refused, .yourself)
        let to = try await store.request(from: "a", nickname: "nickb", now: now)
        XCTAssertEqual(to, "b")
        refused = await refusal { try await store.request(from: "a", nickname: "nickb", now: now) }
        XCTAssertEqual(refused, .alreadyRequested)
        refused = await refusal { try await store.request(from: "b", nickname: "nicka", now: now) }
        XCTAssertEqual(refused, .theyRequested)
        refused = await refusal { try await store.accept(userID: "a", requester: "b", now: now) }
        XCTAssertEqual(refused, .notRecipient, "the sender cannot accept their own request")
        try await store.accept(userID: "b", requester: "a", now: now)
        refused = await refusal { try await store.request(from: "b", nickname: "nicka", now: now) }
        XCTAssertEqual(refused, .alreadyFriends)
        let friendsOfA = try await store.friends(of: "a").map(\.userID)
        let friendsOfB = try await store.friends(of: "b").map(\.userID)
        XCTAssertEqual(friendsOfA, ["b"])
        XCTAssertEqual(friendsOfB, ["a"])
        let checked = try await store.friendIDs(of: "a", among: ["c", "b", "zz"])
        XCTAssertEqual(checked, ["b"])
        // Decline and remove.
        _ = try await store.request(from: "c", nickname: "nicka", now: now)
        let requests = try await store.requests(of: "a")
        XCTAssertEqual(requests.incoming.map(\.userID), ["c"])
        XCTAssertEqual(requests.outgoing.map(\.userID), [])
        refused = await refusal { try await store.decline(userID: "c", requester: "a") }
        XCTAssertEqual(refused, .notRecipient)
        try await store.decline(userID: "a", requester: "c")
        let afterDecline = try await store.requests(of: "a")
        XCTAssertEqual(afterDecline.incoming, [])
        try await store.remove(userID: "b", friend: "a")
        let afterRemove = try await store.friends(of: "a")
        XCTAssertEqual(afterRemove, [])
        refused = await refusal { try await store.remove(userID: "b", friend: "a") }
        XCTAssertEqual(refused, .notFriends)
    }

    static func zipadooSignUpRefusesTakenEmailAndNicknameByIndex(_ store: any ZipadooFriendStore) async throws {
        try await member("a", store)
        var user = AccountStoreContract.user("b", role: "member")
        user.app = "zipadoo"
        user.email = "a@example.com"
        user.nickname = "nickb"
        var refused = await refusal {
            try await store.signUp(user, mole: "doo1", session: AccountStoreContract.session("s-b", user: "b"))
        }
        XCTAssertEqual(refused, .emailTaken)
        user.email = "b@example.com"
        user.nickname = "NICKA"
        refused = await refusal {
            try await store.signUp(user, mole: "doo1", session: AccountStoreContract.session("s-b", user: "b"))
        }
        XCTAssertEqual(refused, .nicknameTaken, "nicknames are unique ignoring case")
        let profile = try await store.profile(userID: "a")
        XCTAssertEqual(profile?.member.mole, "doo3")
        XCTAssertEqual(profile?.email, "a@example.com")
    }
}

// MARK: Replicas: several stores on one database, as several processes have

extension ZipadooFriendStoreContract {
    /// A asks B while B asks A, on two replicas at once, for ten pairs: one request each, the other
    /// answered `theyRequested` as the second of two serial calls is, and one row per pair (the one
    /// request, seen the same way from both ends).
    static func crossingRequestsOnTwoReplicasLeaveOneRequest(_ stores: [any ZipadooFriendStore]) async throws {
        for round in 0..<10 {
            let (a, b) = ("a\(round)", "b\(round)")
            for id in [a, b] { try await member(id, stores[0]) }
            let outcomes = await withTaskGroup(of: String.self) { group in
                for (index, (from, to)) in [(a, b), (b, a)].enumerated() {
                    group.addTask {
                        do {
                            return try await stores[index % stores.count].request(
                                from: from, nickname: "nick\(to)", now: 1)
                        } catch {
                            return "\(error)"
                        }
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
            XCTAssertEqual(outcomes.filter { $0 == a || $0 == b }.count, 1, "\(outcomes)")
            XCTAssertTrue(outcomes.contains("theyRequested"), "\(outcomes)")
            let ofA = try await stores[1].requests(of: a)
            let ofB = try await stores[0].requests(of: b)
            XCTAssertEqual(ofA.outgoing.map(\.userID) + ofA.incoming.map(\.userID), [b], "round \(round): one row")
            XCTAssertEqual(ofB.outgoing.map(\.userID) + ofB.incoming.map(\.userID), [a], "round \(round): one row")
            XCTAssertEqual(ofA.outgoing.map(\.userID), outcomes.contains(b) ? [b] : [], "the winner's request")
            XCTAssertEqual(ofA.outgoing.count, ofB.incoming.count, "round \(round): one request, seen from both ends")
        }
    }

    /// The recipient accepts on one replica and declines on the other at once: one of them happens, the
    /// other is told what the first left (`alreadyFriends` or `noRequest`).
    static func acceptAndDeclineOnTwoReplicasAtOnceDecideOnce(_ stores: [any ZipadooFriendStore]) async throws {
        for round in 0..<10 {
            let (asker, recipient) = ("a\(round)", "b\(round)")
            for id in [asker, recipient] { try await member(id, stores[0]) }
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

final class SQLiteZipadooFriendStoreTests: XCTestCase {
    private var store: SQLiteZipadooFriendStore!
    private var scratch: ScratchAccountDatabase!

    override func setUp() async throws {
        let scratch = try await ScratchAccountDatabase(for: self, name: "zipadoo-friends")
        self.scratch = scratch
        store = SQLiteZipadooFriendStore(accounts: scratch.accounts)
    }

    /// Two stores on the database, as two replicas would have (SQLite has one writer: they take turns).
    private func replicas() async throws -> [any ZipadooFriendStore] {
        [store!, SQLiteZipadooFriendStore(accounts: try await scratch.replica("b"))]
    }

    func testZipadooRequestsRefuseInTheDomainsOrderAndOneRowPerPair() async throws {
        try await ZipadooFriendStoreContract.zipadooRequestsRefuseInTheDomainsOrderAndOneRowPerPair(store)
    }

    func testZipadooSignUpRefusesTakenEmailAndNicknameByIndex() async throws {
        try await ZipadooFriendStoreContract.zipadooSignUpRefusesTakenEmailAndNicknameByIndex(store)
    }

    func testCrossingRequestsOnTwoReplicasLeaveOneRequest() async throws {
        try await ZipadooFriendStoreContract.crossingRequestsOnTwoReplicasLeaveOneRequest(try await replicas())
    }

    func testAcceptAndDeclineOnTwoReplicasAtOnceDecideOnce() async throws {
        try await ZipadooFriendStoreContract.acceptAndDeclineOnTwoReplicasAtOnceDecideOnce(try await replicas())
    }
}
