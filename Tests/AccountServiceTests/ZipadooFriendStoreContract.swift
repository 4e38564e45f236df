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

final class SQLiteZipadooFriendStoreTests: XCTestCase {
    private var store: SQLiteZipadooFriendStore!

    override func setUp() async throws {
        let scratch = try await ScratchAccountDatabase(for: self, name: "zipadoo-friends")
        store = SQLiteZipadooFriendStore(accounts: scratch.accounts)
    }

    func testZipadooRequestsRefuseInTheDomainsOrderAndOneRowPerPair() async throws {
        try await ZipadooFriendStoreContract.zipadooRequestsRefuseInTheDomainsOrderAndOneRowPerPair(store)
    }

    func testZipadooSignUpRefusesTakenEmailAndNicknameByIndex() async throws {
        try await ZipadooFriendStoreContract.zipadooSignUpRefusesTakenEmailAndNicknameByIndex(store)
    }
}
