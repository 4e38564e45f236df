import Foundation
import GRDB
import RPCAccess
import ServiceRuntime
import Synchronization
import XCTest
import YediProto

@testable import AccountService

/// What every `HousetainerMemberStore` must do, written against the protocol (accounts are made and
/// deleted through the account store, which owns them): a second engine gets a class like
/// `SQLiteHousetainerMemberStoreTests`.
enum HousetainerMemberStoreContract {
    static let app: AppID = "housetainer"
    static let now: Int64 = 1_790_000_000_000
    static let week: Int64 = 7 * 86_400_000

    /// A Housetainer account made behind the signup (a founder), with an address.
    static func account(_ id: String, _ accounts: any AccountStore, nickname: String? = nil) async throws {
        var user = AccountStoreContract.user(id, email: "\(id)@example.kr", role: "member")
        user.app = app
        user.passwordHash = nil
        user.nickname = nickname ?? "닉\(id)"
        try await accounts.createUser(user, designer: nil, session: AccountStoreContract.session("s-\(id)", user: id))
    }

    static func invitation(_ id: String, from inviter: String, to email: String, at time: Int64 = now)
        -> InvitationRecord
    {
        InvitationRecord(
            id: id, app: app, code: "", inviterID: inviter, inviteeEmail: email, inviteeName: "손님", stored: .sent,
            createdAtMilliseconds: time)
    }

    /// Stores `invitation` with `code` as the drawn code.
    static func invite(
        _ store: any HousetainerMemberStore, _ invitation: InvitationRecord, code: String, quota: Int = 3
    ) async throws -> InvitationRecord {
        try await store.createInvitation(
            invitation, quota: quota, lifetime: week, draw: { code },
            mail: { YediRuntime.MailMessage(to: $0.inviteeEmail, subject: "초대", text: $0.code) })
    }

    /// The signup of `id` with `email` through a fresh ticket.
    static func signUp(
        _ id: String, email: String, code: String?, nickname: String, _ store: any HousetainerMemberStore,
        accounts: any AccountStore, at time: Int64 = now
    ) async throws {
        let hash = Array("ticket-\(id)-\(UUID().uuidString)".utf8)
        let ticket = SignUpTicketRecord(
            ticketHash: hash, app: app, identity: VerifiedIdentity(kind: "google", subject: id, email: email),
            expiresAtMilliseconds: time + 1_800_000)
        try await accounts.createSignUpTicket(ticket)
        var user = AccountStoreContract.user(id, email: email, role: "member")
        user.app = app
        user.passwordHash = nil
        user.nickname = nickname
        try await store.signUp(
            HousetainerSignUp(
                ticket: ticket, user: user, session: AccountStoreContract.session("s-\(id)", user: id), code: code,
                codeLifetime: week, terms: ["terms": "1", "privacy": "1", "eula": "1"], now: time))
    }

    static func quotaCountsSentAndJoinedAndCollisionsDrawAgain(
        _ store: any HousetainerMemberStore, accounts: any AccountStore
    ) async throws {
        try await account("host", accounts)
        let first = try await invite(store, invitation("i1", from: "host", to: "a@example.kr"), code: "11111111")
        XCTAssertEqual(first.code, "11111111")
        // The first draw collides: the store draws again.
        let draws = Draws(["11111111", "22222222"])
        let second = try await store.createInvitation(
            invitation("i2", from: "host", to: "b@example.kr", at: now - week), quota: 3, lifetime: week,
            draw: { draws.next() }, mail: { YediRuntime.MailMessage(to: $0.inviteeEmail, text: $0.code) })
        XCTAssertEqual(second.code, "22222222")
        _ = try await invite(store, invitation("i3", from: "host", to: "c@example.kr"), code: "33333333")
        // i2 was made a week before `now`: expired, so it does not count.
        _ = try await invite(store, invitation("i4", from: "host", to: "d@example.kr"), code: "44444444")
        do {
            _ = try await invite(store, invitation("i5", from: "host", to: "e@example.kr"), code: "55555555")
            XCTFail("a fourth live invitation")
        } catch HousetainerStoreError.quotaExceeded {}
        do {
            _ = try await invite(
                store, invitation("i6", from: "host", to: "host@example.kr"), code: "66666666", quota: 10)
            XCTFail("one's own address")
        } catch HousetainerStoreError.alreadyMember {}
        let found = try await store.invitation(code: "22222222", app: app)
        XCTAssertEqual(found?.status(now: now, lifetime: week), .expired)
        XCTAssertEqual(found?.inviterNickname, "닉host")
        let invitation = try await store.invitation(code: "22222222", app: "zipadoo")
        XCTAssertNil(invitation, "codes are the app's")
        let invitationIDs = try await store.invitations(inviterID: "host", app: app).map(\.id)
        XCTAssertEqual(invitationIDs, ["i4", "i3", "i1", "i2"])
    }

    static func signUpTurnsTheCodeJoinedOnceAndRecordsTheInviter(
        _ store: any HousetainerMemberStore, accounts: any AccountStore
    ) async throws {
        try await account("host", accounts, nickname: "호스트")
        let code = try await invite(store, invitation("i1", from: "host", to: "a@example.kr"), code: "12345678").code
        do {
            try await signUp("x", email: "x@example.kr", code: code, nickname: "엑스", store, accounts: accounts)
            XCTFail("another address")
        } catch HousetainerStoreError.codeForAnotherAddress {}
        do {
            try await signUp("a", email: "a@example.kr", code: "87654321", nickname: "에이", store, accounts: accounts)
            XCTFail("an unknown code")
        } catch HousetainerStoreError.codeUnknown {}
        do {
            try await signUp("a", email: "a@example.kr", code: code, nickname: "호스트", store, accounts: accounts)
            XCTFail("a taken nickname")
        } catch HousetainerStoreError.nicknameTaken {}
        let user = try await accounts.user(id: "x")
        XCTAssertNil(user, "nothing of a refused signup is written")
        try await signUp("a", email: "a@example.kr", code: code, nickname: "에이", store, accounts: accounts)
        do {
            try await signUp("a2", email: "a@example.kr", code: code, nickname: "에이둘", store, accounts: accounts)
            XCTFail("a joined code")
        } catch HousetainerStoreError.identityTaken {}
        let invited = try await store.member(id: "a", app: app)
        XCTAssertEqual(invited?.inviterNickname, "호스트")
        let buddies = try await store.member(id: "host", app: app)?.buddies
        XCTAssertEqual(buddies, ["에이"])
        let stored = try await store.invitation(code: code, app: app)?.stored
        XCTAssertEqual(stored, .joined)
        let member = try await store.member(id: "a", app: "slp")
        XCTAssertNil(member)
        // An S code past its lifetime signs nobody up.
        let old = try await invite(
            store, invitation("i2", from: "host", to: "b@example.kr", at: now - week), code: "11112222")
        do {
            try await signUp("b", email: "b@example.kr", code: old.code, nickname: "비", store, accounts: accounts)
            XCTFail("an expired code")
        } catch HousetainerStoreError.codeUsed {}
    }

    static func signInFindsTheIdentityOrTheAddressAndLinksIt(
        _ store: any HousetainerMemberStore, accounts: any AccountStore
    ) async throws {
        try await signUp("a", email: "a@example.kr", code: nil, nickname: "에이", store, accounts: accounts)
        let google = VerifiedIdentity(kind: "google", subject: "a", email: "a@example.kr")
        let signedIn = try await store.signIn(identity: google, app: app, now: now)
        XCTAssertEqual(signedIn, "a")
        let kakao = VerifiedIdentity(kind: "kakao", subject: "77", email: "A@example.kr")
        let signedIn2 = try await store.signIn(identity: kakao, app: app, now: now)
        XCTAssertEqual(signedIn2, "a")
        let signedIn3 = try await store.signIn(
            identity: VerifiedIdentity(kind: "kakao", subject: "77"), app: app, now: now)
        XCTAssertEqual(
            signedIn3, "a",
            "linked on the first sign-in")
        let signedIn4 = try await store.signIn(identity: google, app: "zipadoo", now: now)
        XCTAssertNil(signedIn4)
        let signedIn5 = try await store.signIn(
            identity: VerifiedIdentity(kind: "naver", subject: "n", email: "b@example.kr"), app: app, now: now)
        XCTAssertNil(
            signedIn5)
    }

    static func waitlistKeepsOneEntryPerAddressNewestFirst(
        _ store: any HousetainerMemberStore, accounts: any AccountStore
    ) async throws {
        func entry(_ email: String, _ instagram: String, at time: Int64) -> WaitlistRecord {
            WaitlistRecord(
                app: app, email: email, snsURL: "https://x.com", instagramID: instagram, createdAtMilliseconds: time,
                updatedAtMilliseconds: time)
        }
        let added = try await store.joinWaitlist(entry("a@example.kr", "a", at: 1))
        XCTAssertTrue(added)
        let added2 = try await store.joinWaitlist(entry("b@example.kr", "b", at: 2))
        XCTAssertTrue(added2)
        let added3 = try await store.joinWaitlist(entry("a@example.kr", "a2", at: 3))
        XCTAssertFalse(added3)
        let page = try await store.waitlist(app: app, after: nil, limit: 10)
        XCTAssertEqual(page.map(\.instagramID), ["b", "a2"])
        XCTAssertEqual(page.last?.createdAtMilliseconds, 1, "a repeat keeps the entry's first time")
        let next = try await store.waitlist(app: app, after: PagePosition(key: 2, id: "b@example.kr"), limit: 10)
        XCTAssertEqual(next.map(\.email), ["a@example.kr"])
        let noWaitlist = try await store.waitlist(app: "zipadoo", after: nil, limit: 10).isEmpty
        XCTAssertTrue(noWaitlist)
    }

    static func deletingAMemberFreesTheSlotAndForgetsTheirAddress(
        _ store: any HousetainerMemberStore, accounts: any AccountStore
    ) async throws {
        try await account("host", accounts, nickname: "호스트")
        let code = try await invite(store, invitation("i1", from: "host", to: "a@example.kr"), code: "12345678").code
        try await signUp("a", email: "a@example.kr", code: code, nickname: "에이", store, accounts: accounts)
        _ = try await invite(store, invitation("i2", from: "a", to: "c@example.kr"), code: "22223333")
        let forA = try await invite(store, invitation("i3", from: "host", to: "z@example.kr"), code: "99998888")
        try await signUp("z", email: "z@example.kr", code: forA.code, nickname: "제트", store, accounts: accounts)
        _ = try await store.joinWaitlist(
            WaitlistRecord(
                app: app, email: "a@example.kr", snsURL: "https://x.com", instagramID: "a", createdAtMilliseconds: 1,
                updatedAtMilliseconds: 1))
        let deleted = try await accounts.deleteAccount(userID: "a", now: now)
        XCTAssertTrue(deleted)
        let invitationIDs = try await store.invitations(inviterID: "host", app: app).map(\.id)
        XCTAssertEqual(invitationIDs, ["i3"], "the slot is free")
        let invitation = try await store.invitation(code: "22223333", app: app)
        XCTAssertNil(invitation, "their invitations go")
        let noWaitlist = try await store.waitlist(app: app, after: nil, limit: 10).isEmpty
        XCTAssertTrue(noWaitlist)
        let buddies = try await store.member(id: "host", app: app)?.buddies
        XCTAssertEqual(buddies, ["제트"])
        let deleted2 = try await accounts.deleteAccount(userID: "host", now: now)
        XCTAssertTrue(deleted2)
        let orphan = try await store.member(id: "z", app: app)
        XCTAssertEqual(orphan?.inviterLeft, true, "a buddy's inviter becomes \"left\"")
        XCTAssertNil(orphan?.inviterNickname)
    }

    static func anIssuedCodeHasNoInviterNorQuotaAndSignsUpAFounder(
        _ store: any HousetainerMemberStore, accounts: any AccountStore
    ) async throws {
        var issued: [InvitationRecord] = []
        for index in 0..<4 {
            var record = invitation("i\(index)", from: "unused", to: "f\(index)@example.kr")
            record.inviterID = nil
            record.issuedBy = "ht-admin"
            issued.append(try await invite(store, record, code: "1000000\(index)", quota: 3))
        }
        XCTAssertEqual(issued.count, 4, "an issued code counts toward no quota")
        let stored = try await store.invitation(code: "10000000", app: app)
        XCTAssertNil(stored?.inviterID)
        XCTAssertEqual(stored?.issuedBy, "ht-admin")
        try await signUp("f0", email: "f0@example.kr", code: "10000000", nickname: "창립자", store, accounts: accounts)
        let founder = try await store.member(id: "f0", app: app)
        XCTAssertNil(founder?.inviterNickname)
        XCTAssertEqual(founder?.inviterLeft, false, "nobody's invitee, not an inviter who left")
        let used = try await store.invitation(code: "10000000", app: app)
        XCTAssertEqual(used?.stored, .joined)
        // The founder invites as any member; deleting them frees their issued code's row too.
        _ = try await invite(store, invitation("m1", from: "f0", to: "guest@example.kr"), code: "20000000")
        let deleted = try await accounts.deleteAccount(userID: "f0", now: now)
        XCTAssertTrue(deleted)
        let gone = try await store.invitation(code: "10000000", app: app)
        XCTAssertNil(gone, "the code that brought them in goes with them")
    }

    static func setMemberTypeChangesOnlyThatMembersType(
        _ store: any HousetainerMemberStore, accounts: any AccountStore
    ) async throws {
        try await account("host", accounts, nickname: "호스트")
        let code = try await invite(store, invitation("i1", from: "host", to: "a@example.kr"), code: "12345678").code
        try await signUp("a", email: "a@example.kr", code: code, nickname: "에이", store, accounts: accounts)
        let before = try await store.member(id: "a", app: app)?.type
        XCTAssertEqual(before, "a", "every member starts ordinary")
        try await store.setMemberType(id: "a", app: app, type: "H")
        let after = try await store.member(id: "a", app: app)?.type
        XCTAssertEqual(after, "H")
        try await store.setMemberType(id: "a", app: app, type: "h")
        let again = try await store.member(id: "a", app: app)?.type
        XCTAssertEqual(again, "h")
        let host = try await store.member(id: "host", app: app)?.type
        XCTAssertNotEqual(host, "h", "only that member changes")
        for (id, otherApp) in [("nobody", app), ("a", AppID("zipadoo"))] {
            do {
                try await store.setMemberType(id: id, app: otherApp, type: "H")
                XCTFail("\(id) in \(otherApp) is no member")
            } catch let error as HousetainerStoreError {
                XCTAssertEqual(error, .notFound)
            }
        }
    }
}

// MARK: Replicas: several stores on one database, as several processes have

extension HousetainerMemberStoreContract {
    /// One code redeemed by four signups at once, spread over the replicas, ten times. The addresses
    /// differ only in case (two providers' spellings of the invitee's address), so no other index stops
    /// the second account: only the claim's `status = 'S'` does. Each round leaves one account, the
    /// host's buddy; the others leave none.
    static func oneCodeRedeemedOnTwoReplicasAtOnceMakesOneAccount(
        _ stores: [any HousetainerMemberStore], accounts: [any AccountStore]
    ) async throws {
        try await account("host", accounts[0])
        let spellings = ["minji", "Minji", "MINJI", "mInji"]
        for round in 0..<10 {
            let code = String(10_000_000 + round)
            _ = try await invite(
                stores[0], invitation("i\(round)", from: "host", to: "minji\(round)@x.kr"), code: code, quota: 100)
            let outcomes = await withTaskGroup(of: (String, String).self) { group in
                for (index, spelling) in spellings.enumerated() {
                    let (store, accounts) = (stores[index % stores.count], accounts[index % accounts.count])
                    let id = "m\(round)-\(index)"
                    group.addTask {
                        do {
                            try await signUp(
                                id, email: "\(spelling)\(round)@x.kr", code: code, nickname: "가\(round)나\(index)",
                                store, accounts: accounts)
                            return (id, "ok")
                        } catch {
                            return (id, "\(error)")
                        }
                    }
                }
                return await group.reduce(into: [String: String]()) { $0[$1.0] = $1.1 }
            }
            XCTAssertEqual(outcomes.values.filter { $0 == "ok" }.count, 1, "\(outcomes)")
            XCTAssertEqual(outcomes.values.filter { $0 == "codeUsed" }.count, 3, "\(outcomes)")
            for (id, outcome) in outcomes.sorted(by: { $0.key < $1.key }) {
                let member = try await stores[1].member(id: id, app: app)
                if outcome == "ok" {
                    XCTAssertEqual(member?.inviterNickname, "닉host", "round \(round): \(id) is the host's buddy")
                } else {
                    XCTAssertNil(member, "round \(round): \(id) answered \(outcome) and has no account")
                }
            }
        }
        let buddies = try await stores[0].member(id: "host", app: app)?.buddies
        XCTAssertEqual(buddies?.count, 10, "one buddy per code")
    }

    /// Twenty invitations from one member at once, spread over the replicas: exactly the quota's three.
    static func invitationsOnTwoReplicasAtOnceStopAtTheQuota(
        _ stores: [any HousetainerMemberStore], accounts: [any AccountStore]
    ) async throws {
        try await account("host", accounts[0])
        let made = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<20 {
                group.addTask {
                    do {
                        _ = try await invite(
                            stores[index % stores.count],
                            invitation("i\(index)", from: "host", to: "guest\(index)@example.kr"),
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
        let held = try await stores[0].invitations(inviterID: "host", app: app)
        XCTAssertEqual(held.count, 3)
    }

    /// The same address joins the waitlist on both replicas at once: one entry, one "added".
    static func theSameAddressJoiningTheWaitlistOnTwoReplicasAddsItOnce(
        _ stores: [any HousetainerMemberStore], accounts: [any AccountStore]
    ) async throws {
        for round in 0..<10 {
            let added = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<2 {
                    group.addTask {
                        try await stores[index % stores.count].joinWaitlist(
                            WaitlistRecord(
                                app: app, email: "w\(round)@example.kr", snsURL: "https://x.com",
                                instagramID: "w\(index)", createdAtMilliseconds: 1, updatedAtMilliseconds: 1))
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            XCTAssertEqual(added.filter { $0 }.count, 1, "\(added)")
        }
        let entries = try await stores[1].waitlist(app: app, after: nil, limit: 100).map(\.email)
        XCTAssertEqual(entries.sorted(), (0..<10).map { "w\($0)@example.kr" }.sorted(), "one entry per address")
    }
}

/// Codes handed out in order, the last one repeated.
final class Draws: Sendable {
    private let codes: [String]
    private let drawn = Atomic<Int>(0)

    init(_ codes: [String]) { self.codes = codes }

    func next() -> String {
        let index = drawn.add(1, ordering: .relaxed).oldValue
        return codes[min(index, codes.count - 1)]
    }
}

final class SQLiteHousetainerMemberStoreTests: XCTestCase {
    private var store: SQLiteHousetainerMemberStore!
    private var accounts: SQLiteAccountStore!
    private var scratch: ScratchAccountDatabase!

    override func setUp() async throws {
        let scratch = try await ScratchAccountDatabase(for: self, name: "housetainer-store")
        self.scratch = scratch
        accounts = scratch.accounts
        store = SQLiteHousetainerMemberStore(
            database: scratch.database, accounts: scratch.accounts, events: scratch.events)
    }

    /// Two replicas' stores on the database (SQLite has one writer: they take turns), then `body`.
    private func withReplicas(
        _ body: ([any HousetainerMemberStore], [any AccountStore]) async throws -> Void
    ) async throws {
        let other = try await scratch.replica("b")
        try await body(
            [store!, SQLiteHousetainerMemberStore(database: scratch.database, accounts: other, events: other.events)],
            [accounts!, other])
    }

    func testHousetainerQuotaCountsSentAndJoinedAndCollisionsDrawAgain() async throws {
        try await HousetainerMemberStoreContract.quotaCountsSentAndJoinedAndCollisionsDrawAgain(
            store, accounts: accounts)
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
    }

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
}
