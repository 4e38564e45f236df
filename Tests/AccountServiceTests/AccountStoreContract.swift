import Foundation
import GRDB
import Logging
import RPCAccess
import RPCCore
import ServiceRuntime
import XCTest
import YediProto

@testable import AccountService

/// What every `AccountStore` must do, written against the protocol only: a second engine (PostgreSQL)
/// gets a test class like `SQLiteAccountStoreTests` that hands its store to these same checks.
enum AccountStoreContract {
    static func user(_ id: String, email: String? = nil, name: String = "이름", role: UserRole = .customer) -> UserRecord
    {
        UserRecord(
            id: id, role: role, email: email ?? "\(id)@example.com", name: name, phone: "01012345678", gender: 1,
            birthDate: DateParts(year: 1990, month: 1, day: 2), passwordHash: "$scrypt$test", createdAtMilliseconds: 1)
    }

    static func designer(_ id: String, shop: String = "가게", district: String = "강남구") -> DesignerRecord {
        DesignerRecord(
            userID: id, description: "", skills: ["펌"], rank: 1,
            shop: ShopRecord(
                name: shop, phone: "0255512345", city: "서울", district: district, detail: "", latitude: 37,
                longitude: 127, openingHour: 9, closingHour: 21,
                messengerLinks: [MessengerLinkRecord(kind: "kakaotalk", url: "https://k.example")],
                timeZone: "Asia/Seoul"))
    }

    static func session(_ id: String, user: String, expires: Int64 = 1_000) -> SessionRecord {
        SessionRecord(
            id: id, familyID: id, userID: user, refreshHash: Array("hash-\(id)".utf8), createdAtMilliseconds: 0,
            expiresAtMilliseconds: expires)
    }

    static func usersRoundTripAndEmailsAreUnique(_ store: any AccountStore) async throws {
        try await store.createUser(user("u1"), designer: nil, session: session("s1", user: "u1"))
        try await store.createUser(
            user("d1", role: .designer), designer: designer("d1"), session: session("s2", user: "d1"))
        let loaded = try await store.user(id: "u1")
        XCTAssertEqual(loaded, user("u1"))
        let byEmail = try await store.user(app: .yedi, email: "d1@example.com")
        XCTAssertEqual(byEmail?.role, .designer)
        let both = try await store.users(ids: ["u1", "d1", "missing"])
        XCTAssertEqual(Set(both.map(\.id)), ["u1", "d1"])
        let loadedDesigner = try await store.designer(id: "d1")
        XCTAssertEqual(loadedDesigner?.1, designer("d1"))
        await assertRefused(.emailTaken, "a second account with the same email was stored") {
            try await store.createUser(
                user("u2", email: "u1@example.com"), designer: nil, session: session("s3", user: "u2"))
        }
        let afterRefusal = try await store.user(id: "u2")
        XCTAssertNil(afterRefusal, "the refused sign-up left nothing behind")
    }

    /// Tenant: the same address in two apps is two accounts; within one app it stays unique. Accounts
    /// that sign in by phone or a provider have no address and no password, and nicknames are unique
    /// per app (by the store, not by a lookup before it).
    static func tenantAccountsAreScopedToTheirApp(_ store: any AccountStore) async throws {
        try await store.createUser(
            user("y1", email: "same@example.com"), designer: nil, session: session("s1", user: "y1"))
        var slpUser = user("z1", email: "same@example.com", role: "member")
        slpUser.app = "slp"
        try await store.createUser(slpUser, designer: nil, session: session("s2", user: "z1"))
        let inYedi = try await store.user(app: .yedi, email: "same@example.com")
        let inSLP = try await store.user(app: "slp", email: "same@example.com")
        let inZipadoo = try await store.user(app: "zipadoo", email: "same@example.com")
        XCTAssertEqual(inYedi?.id, "y1")
        XCTAssertEqual(inSLP?.id, "z1")
        XCTAssertEqual(inSLP?.app, "slp")
        XCTAssertNil(inZipadoo)
        var twin = slpUser
        twin.id = "z2"
        await assertRefused(.emailTaken, "a second SLP account with the same address was stored") {
            try await store.createUser(twin, designer: nil, session: session("s3", user: "z2"))
        }

        for (index, nickname) in ["모래", "Sand"].enumerated() {
            var phoneOnly = user("p\(index)", role: "member")
            phoneOnly.app = "slp"
            phoneOnly.email = ""
            phoneOnly.passwordHash = nil
            phoneOnly.nickname = nickname
            try await store.createUser(phoneOnly, designer: nil, session: session("sp\(index)", user: phoneOnly.id))
            let loaded = try await store.user(id: phoneOnly.id)
            XCTAssertEqual(loaded, phoneOnly, "no address, no password, a nickname")
        }
        var sameNickname = user("p9", role: "member")
        sameNickname.app = "slp"
        sameNickname.email = ""
        sameNickname.nickname = "sand"
        await assertRefused(.nicknameTaken, "a nickname taken in the app (in another case) was stored twice") {
            try await store.createUser(sameNickname, designer: nil, session: session("sp9", user: "p9"))
        }
        let refused = try await store.user(id: "p9")
        XCTAssertNil(refused)
        sameNickname.app = "zipadoo"
        try await store.createUser(sameNickname, designer: nil, session: session("sp9", user: "p9"))
        let otherApp = try await store.user(id: "p9")
        XCTAssertEqual(otherApp?.nickname, "sand", "another app's nickname is its own")
        let deleted = try await store.deleteAccount(userID: "p0", now: 10)
        XCTAssertTrue(deleted, "an account without an address is deleted")
    }

    /// Runs `write`, which the store must refuse with `expected`.
    static func assertRefused(
        _ expected: AccountStoreError, _ message: String, _ write: () async throws -> Void,
        file: StaticString = #filePath, line: UInt = #line
    ) async {
        do {
            try await write()
            XCTFail(message, file: file, line: line)
        } catch {
            XCTAssertEqual(error as? AccountStoreError, expected, "\(error)", file: file, line: line)
        }
    }

    static func pendingSignUp(_ id: String, email: String, expires: Int64 = 1_000) -> PendingSignUpRecord {
        PendingSignUpRecord(
            id: id, email: email, request: [1, 2, 3], passwordHash: "$scrypt$test", codeHash: Array("code-\(id)".utf8),
            expiresAtMilliseconds: expires, createdAtMilliseconds: 0)
    }

    /// A sign-up is checked against its own code only, spends a try per wrong code, completes once, and
    /// cannot complete onto an address that got an account meanwhile.
    static func signUpsCompleteOnceWithTheirOwnCode(_ store: any AccountStore) async throws {
        let mail = YediRuntime.MailMessage(to: "new@example.com", subject: "code", text: "123456")
        try await store.startSignUp(pendingSignUp("p1", email: "new@example.com"), mail: mail)
        try await store.startSignUp(pendingSignUp("p2", email: "new@example.com"), mail: mail)
        try await store.startSignUp(nil, mail: mail)  // a notice: nothing pending

        let crossed = try await store.checkSignUpCode(
            id: "p1", codeHash: Array("code-p2".utf8), now: 10, maximumAttempts: 2)
        XCTAssertNil(crossed, "another sign-up's code")
        let late = try await store.checkSignUpCode(
            id: "p2", codeHash: Array("code-p2".utf8), now: 1_000, maximumAttempts: 2)
        XCTAssertNil(late, "expired")
        let unknown = try await store.checkSignUpCode(
            id: "p9", codeHash: Array("code-p9".utf8), now: 10, maximumAttempts: 2)
        XCTAssertNil(unknown)
        let right = try await store.checkSignUpCode(
            id: "p1", codeHash: Array("code-p1".utf8), now: 10, maximumAttempts: 2)
        XCTAssertEqual(right, pendingSignUp("p1", email: "new@example.com").with(attempts: 1))
        _ = try await store.checkSignUpCode(id: "p1", codeHash: Array("wrong".utf8), now: 10, maximumAttempts: 2)
        let spent = try await store.checkSignUpCode(
            id: "p1", codeHash: Array("code-p1".utf8), now: 10, maximumAttempts: 2)
        XCTAssertNil(spent, "two wrong codes spent both tries")

        let user = user("u1", email: "new@example.com")
        try await store.completeSignUp(id: "p2", user: user, designer: nil, session: session("s1", user: "u1"))
        let created = try await store.user(app: .yedi, email: "new@example.com")
        XCTAssertEqual(created, user)
        await assertRefused(.notFound, "a sign-up completed twice") {
            try await store.completeSignUp(id: "p2", user: user, designer: nil, session: session("s2", user: "u1"))
        }
        try await store.startSignUp(pendingSignUp("p3", email: "new@example.com", expires: 5_000), mail: mail)
        await assertRefused(.emailTaken, "a second account for the address") {
            try await store.completeSignUp(
                id: "p3", user: Self.user("u2", email: "new@example.com"), designer: nil,
                session: session("s3", user: "u2"))
        }
        let pruned = try await store.pruneSignUps(expiredBefore: 2_000)
        XCTAssertEqual(pruned, 1, "p1 (expired at 1 000) goes; p3 (5 000) stays")
        let p3 = try await store.checkSignUpCode(id: "p3", codeHash: Array("code-p3".utf8), now: 10, maximumAttempts: 5)
        XCTAssertNotNil(p3, "a refused completion leaves the sign-up as it was")
    }

    static func sessionsRotateOnceAndReuseRevokesTheFamily(_ store: any AccountStore) async throws {
        try await store.createUser(user("u1"), designer: nil, session: session("s1", user: "u1"))
        var next = session("s2", user: "")
        next.familyID = "ignored"
        let rotated = try await store.rotateSession(refreshHash: Array("hash-s1".utf8), next: next, now: 10)
        XCTAssertEqual(rotated, .rotated(userID: "u1", familyID: "s1"))
        let reused = try await store.rotateSession(
            refreshHash: Array("hash-s1".utf8), next: session("s3", user: ""), now: 11)
        XCTAssertEqual(reused, .reused)
        let revoked = try await store.rotateSession(
            refreshHash: Array("hash-s2".utf8), next: session("s4", user: ""), now: 12)
        XCTAssertEqual(revoked, .unknown, "the family's newer token died with it")
        let unknown = try await store.rotateSession(refreshHash: [1, 2, 3], next: session("s5", user: ""), now: 12)
        XCTAssertEqual(unknown, .unknown)
        try await store.createSession(session("s6", user: "u1", expires: 100))
        let expired = try await store.rotateSession(
            refreshHash: Array("hash-s6".utf8), next: session("s7", user: ""), now: 100)
        XCTAssertEqual(expired, .expired)
    }

    static func followCountsStayExact(_ store: any AccountStore) async throws {
        try await store.createUser(user("c1"), designer: nil, session: session("s1", user: "c1"))
        try await store.createUser(user("c2"), designer: nil, session: session("s2", user: "c2"))
        try await store.createUser(
            user("d1", role: .designer), designer: designer("d1"), session: session("s3", user: "d1"))
        let one = try await store.follow(customerID: "c1", designerID: "d1", now: 1)
        let still = try await store.follow(customerID: "c1", designerID: "d1", now: 2)
        let two = try await store.follow(customerID: "c2", designerID: "d1", now: 3)
        XCTAssertEqual([one, still, two], [1, 1, 2])
        let down = try await store.unfollow(customerID: "c1", designerID: "d1")
        let stillDown = try await store.unfollow(customerID: "c1", designerID: "d1")
        XCTAssertEqual([down, stillDown], [1, 1])
        await assertRefused(.notFound, "followed a customer") {
            _ = try await store.follow(customerID: "c1", designerID: "c2", now: 4)
        }
        // Deleting a follower gives the count back; deleting the designer removes the follows.
        let deletedc2 = try await store.deleteAccount(userID: "c2", now: 1_000)
        XCTAssertTrue(deletedc2)
        let profile = try await store.designer(id: "d1")
        XCTAssertEqual(profile?.1.followerCount, 0)
        _ = try await store.follow(customerID: "c1", designerID: "d1", now: 5)
        let deletedd1 = try await store.deleteAccount(userID: "d1", now: 1_000)
        XCTAssertTrue(deletedd1)
        let followed = try await store.followedDesignerIDs(userID: "c1")
        XCTAssertEqual(followed, [])
        let deletedAgain = try await store.deleteAccount(userID: "d1", now: 1_000)
        XCTAssertFalse(deletedAgain, "already gone")
    }

    static func deletionRemovesEveryTrace(_ store: any AccountStore) async throws {
        try await store.createUser(user("c1"), designer: nil, session: session("s1", user: "c1"))
        try await store.createUser(
            user("d1", role: .designer), designer: designer("d1", shop: "지울가게"), session: session("s2", user: "d1"))
        _ = try await store.recordRecentSearch(userID: "c1", kind: .designer, value: "d1", id: "r1", now: 1, keep: 20)
        _ = try await store.recordRecentSearch(userID: "d1", kind: .query, value: "펌", id: "r2", now: 1, keep: 20)
        let attempt = try await store.beginPasswordAttempt(
            account: "d1@example.com", address: "10.0.0.1", now: 1, throttle: SignInThrottle())
        XCTAssertEqual(attempt, .admitted)
        let deletedd1 = try await store.deleteAccount(userID: "d1", now: 1_000)
        XCTAssertTrue(deletedd1)
        let gone = try await store.user(id: "d1")
        XCTAssertNil(gone)
        let visits = try await store.recentSearches(userID: "c1")
        XCTAssertEqual(visits, [], "other users' visits to the deleted designer are gone")
        let hits = try await store.searchDesigners(query: "지울가게", after: nil, limit: 10)
        XCTAssertTrue(hits.isEmpty, "the search index forgot the designer")
        let session = try await store.rotateSession(
            refreshHash: Array("hash-s2".utf8), next: session("s3", user: ""), now: 2)
        XCTAssertEqual(session, .unknown)
        let attempts = try await store.passwordAttempts(account: "d1@example.com", address: "10.0.0.1")
        XCTAssertEqual(attempts, ThrottleState(), "the deleted account's attempts are forgotten")
    }

    /// Concurrent attempts are decided one after the other: of 30 at once from one address, exactly
    /// `maximumFailures` go ahead and the pair is locked; another address is not.
    static func passwordAttemptsAreDecidedOneAtATime(_ store: any AccountStore) async throws {
        let throttle = SignInThrottle()
        let decisions = try await withThrowingTaskGroup(of: ThrottleDecision.self) { group in
            for _ in 0..<30 {
                group.addTask {
                    try await store.beginPasswordAttempt(
                        account: "a@example.com", address: "10.0.0.1", now: 1_000, throttle: throttle)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(decisions.filter { $0 == .admitted }.count, throttle.maximumFailures)
        XCTAssertEqual(
            decisions.filter { $0 == .locked(untilMilliseconds: 1_000 + throttle.lockoutMilliseconds) }.count,
            30 - throttle.maximumFailures)
        let other = try await store.beginPasswordAttempt(
            account: "a@example.com", address: "10.0.0.2", now: 1_000, throttle: throttle)
        XCTAssertEqual(other, .admitted, "another address is not locked")
        // A right password gives its failure back and makes the address known to the account.
        try await store.endPasswordAttempt(
            account: "a@example.com", address: "10.0.0.2", outcome: .succeeded, throttle: throttle)
        let known = try await store.passwordAttempts(account: "a@example.com", address: "10.0.0.2")
        XCTAssertEqual(known.pair, ThrottleRecord(windowStartedAtMilliseconds: 1_000, known: true))
        XCTAssertEqual(known.account?.failures, throttle.maximumFailures, "the failures of 10.0.0.1 still count")
    }
}

extension AccountStoreContract {
    static func member(_ id: String, app: AppID, nickname: String) -> UserRecord {
        UserRecord(
            id: id, role: "member", app: app, email: "", name: nickname, phone: "01012345678", gender: 0,
            birthDate: nil, passwordHash: nil, createdAtMilliseconds: 1, nickname: nickname)
    }

    /// Identity: a verified identity links one account per app; a ticket creates it once, only in its own
    /// app and before it expires; phone codes are used once, spend tries and expire.
    static func identitiesLinkOneAccountPerAppThroughTickets(_ store: any AccountStore) async throws {
        let phone = VerifiedIdentity.phone("+821012345678")
        let ticket = SignUpTicketRecord(
            ticketHash: Array("t1".utf8), app: "slp", identity: phone, expiresAtMilliseconds: 600)
        try await store.createSignUpTicket(ticket)
        let unknown = try await store.user(app: "slp", identity: phone)
        XCTAssertNil(unknown)
        let foreign = try await store.signUpTicket(hash: ticket.ticketHash, app: "housetainer", now: 0)
        XCTAssertNil(foreign, "a ticket of SLP is no ticket in Housetainer")
        let expired = try await store.signUpTicket(hash: ticket.ticketHash, app: "slp", now: 600)
        XCTAssertNil(expired)
        let found = try await store.signUpTicket(hash: ticket.ticketHash, app: "slp", now: 599)
        XCTAssertEqual(found, ticket)

        do {
            try await store.completeIdentitySignUp(
                ticket: ticket, user: member("m1", app: "slp", nickname: "새싹"), session: session("s1", user: "m1"),
                now: 600)
            XCTFail("an expired ticket created an account")
        } catch let error as AccountStoreError {
            XCTAssertEqual(error, .notFound)
        }
        try await store.completeIdentitySignUp(
            ticket: ticket, user: member("m1", app: "slp", nickname: "새싹"), session: session("s1", user: "m1"),
            now: 10)
        let linked = try await store.user(app: "slp", identity: phone)
        XCTAssertEqual(linked?.id, "m1")
        XCTAssertNil(linked?.passwordHash)
        let identities = try await store.identities(userID: "m1")
        XCTAssertEqual(identities, [phone])
        let otherApp = try await store.user(app: "zipadoo", identity: phone)
        XCTAssertNil(otherApp, "the same number in another app is another account")
        do {
            try await store.completeIdentitySignUp(
                ticket: ticket, user: member("m2", app: "slp", nickname: "다른"), session: session("s2", user: "m2"),
                now: 10)
            XCTFail("a ticket was used twice")
        } catch let error as AccountStoreError {
            XCTAssertEqual(error, .notFound)
        }

        // A second ticket for the same identity cannot make a second account; a taken nickname keeps the
        // ticket for another try.
        let again = SignUpTicketRecord(
            ticketHash: Array("t2".utf8), app: "slp", identity: phone, expiresAtMilliseconds: 600)
        try await store.createSignUpTicket(again)
        do {
            try await store.completeIdentitySignUp(
                ticket: again, user: member("m3", app: "slp", nickname: "셋"), session: session("s3", user: "m3"),
                now: 10)
            XCTFail("one identity got two accounts")
        } catch let error as AccountStoreError {
            XCTAssertEqual(error, .identityTaken)
        }
        let kakao = SignUpTicketRecord(
            ticketHash: Array("t3".utf8), app: "slp", identity: VerifiedIdentity(kind: "kakao", subject: "42"),
            expiresAtMilliseconds: 600)
        try await store.createSignUpTicket(kakao)
        do {
            try await store.completeIdentitySignUp(
                ticket: kakao, user: member("m4", app: "slp", nickname: "새싹"), session: session("s4", user: "m4"),
                now: 10)
            XCTFail("a taken nickname was stored")
        } catch let error as AccountStoreError {
            XCTAssertEqual(error, .nicknameTaken)
        }
        let kept = try await store.signUpTicket(hash: kakao.ticketHash, app: "slp", now: 10)
        XCTAssertNotNil(kept, "a refused completion leaves its ticket")

        // Deleting the account unlinks its identities, and its number's tickets go with it.
        _ = try await store.deleteAccount(userID: "m1", now: 20)
        let afterDeletion = try await store.user(app: "slp", identity: phone)
        XCTAssertNil(afterDeletion)
        let numbersTicket = try await store.signUpTicket(hash: again.ticketHash, app: "slp", now: 10)
        XCTAssertNil(numbersTicket, "a ticket names the deleted account's number")
        let pruned = try await store.pruneIdentityVerifications(expiredBefore: 601)
        XCTAssertEqual(pruned, 1, "the Kakao ticket left")
    }

    static func phoneCodesAreUsedOnceSpendTriesAndExpire(_ store: any AccountStore) async throws {
        let sms = YediRuntime.SmsMessage(to: "+821012345678", text: "code", template: "phone-verification-code")
        func verification(_ id: String) -> PhoneVerificationRecord {
            PhoneVerificationRecord(
                id: id, app: "slp", phone: "+821012345678", codeHash: Array("right-\(id)".utf8),
                expiresAtMilliseconds: 300, createdAtMilliseconds: 0)
        }
        for id in ["v1", "v2", "v3"] {
            // Each under keys of its own: the send limits are tested in SlpPhoneSendLimitTests.
            let limits = PhoneSendLimits(
                throttle: PhoneSendThrottle(), numberKey: Array("n-\(id)".utf8), addressKey: Array("a-\(id)".utf8))
            let sent = try await store.startPhoneVerification(verification(id), sms: sms, limits: limits)
            XCTAssertEqual(sent, .admitted)
        }
        let wrongApp = try await store.checkPhoneCode(
            id: "v1", app: "housetainer", codeHash: Array("right-v1".utf8), now: 1, maximumAttempts: 5)
        XCTAssertNil(wrongApp)
        let right = try await store.checkPhoneCode(
            id: "v1", app: "slp", codeHash: Array("right-v1".utf8), now: 1, maximumAttempts: 5)
        XCTAssertEqual(right?.phone, "+821012345678")
        let reused = try await store.checkPhoneCode(
            id: "v1", app: "slp", codeHash: Array("right-v1".utf8), now: 1, maximumAttempts: 5)
        XCTAssertNil(reused, "a code proves its number once")
        for _ in 0..<5 {
            let wrong = try await store.checkPhoneCode(
                id: "v2", app: "slp", codeHash: Array("wrong".utf8), now: 1, maximumAttempts: 5)
            XCTAssertNil(wrong)
        }
        let locked = try await store.checkPhoneCode(
            id: "v2", app: "slp", codeHash: Array("right-v2".utf8), now: 1, maximumAttempts: 5)
        XCTAssertNil(locked, "5 wrong codes end the verification")
        let expired = try await store.checkPhoneCode(
            id: "v3", app: "slp", codeHash: Array("right-v3".utf8), now: 300, maximumAttempts: 5)
        XCTAssertNil(expired)
        let pruned = try await store.pruneIdentityVerifications(expiredBefore: 301)
        XCTAssertEqual(pruned, 2)
    }

    /// A reset spends tries and expires like every code; it replaces only its own user's password, once;
    /// a new password ends every session of the user and makes the given one.
    static func passwordResetsReplaceTheirOwnUsersPasswordOnce(_ store: any AccountStore) async throws {
        try await store.createUser(user("u1"), designer: nil, session: session("s1", user: "u1"))
        try await store.createUser(user("u2"), designer: nil, session: session("s2", user: "u2"))
        func reset(_ id: String, user: String?, expires: Int64 = 1_000) -> PasswordResetRecord {
            PasswordResetRecord(
                id: id, app: .yedi, userID: user, codeHash: Array("right-\(id)".utf8), expiresAtMilliseconds: expires,
                createdAtMilliseconds: 0)
        }
        try await store.startPasswordReset(reset("r1", user: "u1"), mail: nil)
        try await store.startPasswordReset(reset("r2", user: nil), mail: nil)
        try await store.startPasswordReset(reset("r3", user: "u1", expires: 10), mail: nil)
        let wrongApp = try await store.checkPasswordResetCode(
            id: "r1", app: "slp", codeHash: Array("right-r1".utf8), now: 1, maximumAttempts: 5)
        XCTAssertNil(wrongApp, "a reset belongs to its app")
        let noAccount = try await store.checkPasswordResetCode(
            id: "r2", app: .yedi, codeHash: Array("right-r2".utf8), now: 1, maximumAttempts: 5)
        XCTAssertNotNil(noAccount)
        XCTAssertNil(noAccount?.userID, "a reset for an address without an account resets nobody")
        let expired = try await store.checkPasswordResetCode(
            id: "r3", app: .yedi, codeHash: Array("right-r3".utf8), now: 10, maximumAttempts: 5)
        XCTAssertNil(expired)
        for _ in 0..<2 {
            let wrong = try await store.checkPasswordResetCode(
                id: "r1", app: .yedi, codeHash: Array("wrong".utf8), now: 1, maximumAttempts: 2)
            XCTAssertNil(wrong)
        }
        let locked = try await store.checkPasswordResetCode(
            id: "r1", app: .yedi, codeHash: Array("right-r1".utf8), now: 1, maximumAttempts: 2)
        XCTAssertNil(locked, "wrong codes spend the reset's tries")
        let right = try await store.checkPasswordResetCode(
            id: "r1", app: .yedi, codeHash: Array("right-r1".utf8), now: 1, maximumAttempts: 5)
        XCTAssertEqual(right?.userID, "u1")

        func replacement(_ user: String, reset: String?, session id: String) -> PasswordReplacement {
            PasswordReplacement(
                userID: user, passwordHash: "$scrypt$new-\(user)", resetID: reset,
                session: session(id, user: user, expires: 5_000), revokedAtMilliseconds: 99, notice: nil)
        }
        await assertRefused(.notFound, "u1's reset changed u2's password") {
            try await store.replacePassword(replacement("u2", reset: "r1", session: "s3"))
        }
        let untouched = try await store.user(id: "u2")
        XCTAssertEqual(untouched?.passwordHash, "$scrypt$test")
        try await store.replacePassword(replacement("u1", reset: "r1", session: "s4"))
        let changed = try await store.user(id: "u1")
        XCTAssertEqual(changed?.passwordHash, "$scrypt$new-u1")
        await assertRefused(.notFound, "a reset was used twice") {
            try await store.replacePassword(replacement("u1", reset: "r1", session: "s5"))
        }
        let oldSession = try await store.rotateSession(
            refreshHash: Array("hash-s1".utf8), next: session("s6", user: ""), now: 100)
        XCTAssertEqual(oldSession, .unknown, "a new password ends the sessions that were")
        let newSession = try await store.rotateSession(
            refreshHash: Array("hash-s4".utf8), next: session("s7", user: ""), now: 100)
        XCTAssertEqual(newSession, .rotated(userID: "u1", familyID: "s4"))
        let otherUser = try await store.rotateSession(
            refreshHash: Array("hash-s2".utf8), next: session("s8", user: ""), now: 100)
        XCTAssertEqual(otherUser, .rotated(userID: "u2", familyID: "s2"), "nobody else's sessions end")
        try await store.replacePassword(replacement("u2", reset: nil, session: "s9"))
        let pruned = try await store.pruneSignUps(expiredBefore: 2_000)
        XCTAssertEqual(pruned, 1, "r2 is left to prune (r3 went with u1's new password)")
    }
}

// MARK: Replicas: several stores on one database, as several processes have

extension AccountStoreContract {
    /// The same refresh token on two replicas at once: one `rotated`, one `reused` (which ends the family,
    /// the winner's new token included), as two serial calls are answered.
    static func theSameRefreshTokenOnTwoReplicasAtOnceRotatesOnce(_ stores: [any AccountStore]) async throws {
        let (mine, other) = (stores[0], stores[1])
        try await mine.createUser(user("u1"), designer: nil, session: session("s0", user: "u1"))
        for round in 0..<10 {
            let token = SessionRecord(
                id: "t\(round)", familyID: "f\(round)", userID: "u1", refreshHash: Array("token-\(round)".utf8),
                createdAtMilliseconds: 0, expiresAtMilliseconds: 1_000)
            try await mine.createSession(token)
            async let here = mine.rotateSession(
                refreshHash: token.refreshHash, next: session("a\(round)", user: ""), now: 10)
            async let there = other.rotateSession(
                refreshHash: token.refreshHash, next: session("b\(round)", user: ""), now: 10)
            let outcomes = try await [here, there]
            XCTAssertEqual(
                outcomes.filter { $0 == .rotated(userID: "u1", familyID: "f\(round)") }.count, 1, "\(outcomes)")
            XCTAssertEqual(outcomes.filter { $0 == .reused }.count, 1, "\(outcomes)")
            for next in ["a\(round)", "b\(round)"] {
                let after = try await stores[2 % stores.count].rotateSession(
                    refreshHash: Array("hash-\(next)".utf8), next: session("c\(round)", user: ""), now: 11)
                XCTAssertEqual(after, .unknown, "the reuse ended the family, the winner's new token with it")
            }
        }
    }

    /// 30 wrong passwords for one account from one address, spread over the replicas at once: exactly
    /// `maximumFailures` go ahead, the rest find the pair locked.
    static func passwordAttemptsOnReplicasAreCountedExactly(_ stores: [any AccountStore]) async throws {
        let throttle = SignInThrottle()
        let decisions = try await withThrowingTaskGroup(of: ThrottleDecision.self) { group in
            for attempt in 0..<30 {
                group.addTask {
                    try await stores[attempt % stores.count].beginPasswordAttempt(
                        account: "a@example.com", address: "10.0.0.1", now: 1_000, throttle: throttle)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(decisions.filter { $0 == .admitted }.count, throttle.maximumFailures)
        let state = try await stores[0].passwordAttempts(account: "a@example.com", address: "10.0.0.1")
        XCTAssertEqual(state.pair?.failures, throttle.maximumFailures)
        XCTAssertEqual(state.account?.failures, throttle.maximumFailures)
    }

    /// 20 customers follow one designer at once through the replicas (one of them twice, on two): the
    /// count is exactly the number of followers.
    static func followsOnReplicasKeepTheCountExact(_ stores: [any AccountStore]) async throws {
        try await stores[0].createUser(
            user("d1", role: .designer), designer: designer("d1"), session: session("s-d1", user: "d1"))
        for index in 0..<20 {
            try await stores[0].createUser(
                user("c\(index)"), designer: nil, session: session("s-c\(index)", user: "c\(index)"))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    _ = try await stores[index % stores.count].follow(customerID: "c\(index)", designerID: "d1", now: 1)
                }
            }
            group.addTask { _ = try await stores[1].follow(customerID: "c0", designerID: "d1", now: 2) }
            try await group.waitForAll()
        }
        let profile = try await stores[stores.count - 1].designer(id: "d1")
        XCTAssertEqual(profile?.1.followerCount, 20)
    }
}

/// The contract against the SQLite store, on a scratch database of its own.
final class SQLiteAccountStoreTests: XCTestCase {
    private var database: ServiceDatabase!
    private var store: SQLiteAccountStore!
    private var scratch: ScratchAccountDatabase!

    override func setUp() async throws {
        let scratch = try await ScratchAccountDatabase(for: self, name: "account-store")
        self.scratch = scratch
        database = scratch.database
        store = scratch.accounts
    }

    /// Three stores on the database, as three replicas would have (SQLite has one writer: they take turns).
    private func replicas() async throws -> [any AccountStore] {
        [store!, try await scratch.replica("b"), try await scratch.replica("c")]
    }

    func testTheSameRefreshTokenOnTwoReplicasAtOnceRotatesOnce() async throws {
        try await AccountStoreContract.theSameRefreshTokenOnTwoReplicasAtOnceRotatesOnce(try await replicas())
    }

    func testPasswordAttemptsOnReplicasAreCountedExactly() async throws {
        try await AccountStoreContract.passwordAttemptsOnReplicasAreCountedExactly(try await replicas())
    }

    func testFollowsOnReplicasKeepTheCountExact() async throws {
        try await AccountStoreContract.followsOnReplicasKeepTheCountExact(try await replicas())
    }

    func testUsersRoundTripAndEmailsAreUnique() async throws {
        try await AccountStoreContract.usersRoundTripAndEmailsAreUnique(store)
    }

    func testTenantAccountsAreScopedToTheirApp() async throws {
        try await AccountStoreContract.tenantAccountsAreScopedToTheirApp(store)
    }

    func testSignUpsCompleteOnceWithTheirOwnCode() async throws {
        try await AccountStoreContract.signUpsCompleteOnceWithTheirOwnCode(store)
        // SQLite-specific: each sign-up's mail sits in the outbox, written by the same transaction.
        let mails = try await database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox WHERE peer = 'mail'")
        }
        XCTAssertEqual(mails, 4)
    }

    func testIdentitiesLinkOneAccountPerAppThroughTickets() async throws {
        try await AccountStoreContract.identitiesLinkOneAccountPerAppThroughTickets(store)
    }

    func testIdentityPhoneCodesAreUsedOnceSpendTriesAndExpire() async throws {
        try await AccountStoreContract.phoneCodesAreUsedOnceSpendTriesAndExpire(store)
        let messages = try await database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox WHERE peer = 'sms'")
        }
        XCTAssertEqual(messages, 3, "each verification's SMS is in the outbox, written by the same transaction")
    }

    func testPasswordResetsReplaceTheirOwnUsersPasswordOnce() async throws {
        try await AccountStoreContract.passwordResetsReplaceTheirOwnUsersPasswordOnce(store)
        let revoked = try await database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox WHERE method LIKE '%RevokeUser'")
        }
        XCTAssertEqual(revoked, 2 * 3, "each new password revokes the user's tokens in the three peers")
    }

    func testSessionsRotateOnceAndReuseRevokesTheFamily() async throws {
        try await AccountStoreContract.sessionsRotateOnceAndReuseRevokesTheFamily(store)
    }

    func testFollowCountsStayExact() async throws {
        try await AccountStoreContract.followCountsStayExact(store)
    }

    func testPasswordAttemptsAreDecidedOneAtATime() async throws {
        try await AccountStoreContract.passwordAttemptsAreDecidedOneAtATime(store)
    }

    /// A changed name or profile image queues `UserChanged` for each service with a `UserDirectory`, in the
    /// updating transaction; other fields concern no other service.
    func testUserDirectoryPeersAreToldOfAChangedPublicFieldInTheSameTransaction() async throws {
        try await store.createUser(
            AccountStoreContract.user("u1"), designer: nil, session: AccountStoreContract.session("s1", user: "u1"))
        let created = try await store.user(id: "u1")
        var user = try XCTUnwrap(created)
        user.phone = "01099998888"
        user.favouriteStyle = "단발"
        try await store.updateUser(user)
        func jobs() async throws -> [String] {
            try await database.read { db in
                try Row.fetchAll(db, sql: "SELECT peer, method FROM runtime_outbox ORDER BY peer, rowid").map {
                    "\($0["peer"] as String) \($0["method"] as String)"
                }
            }
        }
        let none = try await jobs()
        XCTAssertEqual(none, [], "no public field changed")
        user.name = "새 이름"
        try await store.updateUser(user)
        user.profileImageID = "img_1"
        try await store.updateUser(user)
        let told = try await jobs()
        XCTAssertEqual(
            told,
            [
                "chat yedi.runtime.Users/UserChanged", "chat yedi.runtime.Users/UserChanged",
                "content yedi.runtime.Users/UserChanged", "content yedi.runtime.Users/UserChanged",
            ])
    }

    /// A designer's shop name or area is on every card beside their name: changing it tells the same
    /// services; changing the hours does not. BatchGetUsers' shop cards come from the store.
    func testUserDirectoryPeersAreToldOfAChangedShopCard() async throws {
        try await store.createUser(
            AccountStoreContract.user("d1", role: .designer), designer: AccountStoreContract.designer("d1"),
            session: AccountStoreContract.session("s1", user: "d1"))
        let cards = try await store.shopCards(designerIDs: ["d1", "nobody"])
        XCTAssertEqual(cards, ["d1": ShopCardRecord(name: "가게", city: "서울", district: "강남구")])
        XCTAssertEqual(cards["d1"]?.area, "서울 강남구")
        let loaded = try await store.designer(id: "d1")
        var designer = try XCTUnwrap(loaded).1
        func told() async throws -> Int {
            try await database.read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox WHERE method LIKE '%UserChanged'") ?? 0
            }
        }
        let afterCreation = try await told()
        designer.shop.closingHour = 20
        try await store.updateDesigner(designer)
        let hoursOnly = try await told()
        XCTAssertEqual(hoursOnly, afterCreation, "hours are not on a card")
        designer.shop.district = "마포구"
        try await store.updateDesigner(designer)
        let moved = try await told()
        XCTAssertEqual(moved, afterCreation + 2, "content and chat are told")
    }

    func testDeletionRemovesEveryTraceAndSchedulesThePurges() async throws {
        try await AccountStoreContract.deletionRemovesEveryTrace(store)
        // SQLite-specific: the revocations and purges sit in the outbox, written by the same transaction,
        // each peer's revocation before its purge (a peer's jobs are delivered in order).
        let jobs = try await database.read { db in
            try Row.fetchAll(db, sql: "SELECT peer, method FROM runtime_outbox ORDER BY peer, rowid").map {
                "\($0["peer"] as String) \($0["method"] as String)"
            }
        }
        XCTAssertEqual(
            jobs,
            [
                "booking yedi.booking.BookingService/SetUpDesigner",
                "booking yedi.runtime.Revocations/RevokeUser", "booking yedi.booking.BookingService/PurgeUser",
                "chat yedi.runtime.Revocations/RevokeUser", "chat yedi.chat.ChatService/PurgeUser",
                "content yedi.runtime.Revocations/RevokeUser", "content yedi.content.ContentService/PurgeUser",
            ])
        let revoked = try await database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_revoked_user")
        }
        XCTAssertEqual(revoked, 1, "deleted users' tokens are revoked in the deleting transaction")
        let integrity = try await database.integrityCheck()
        XCTAssertEqual(integrity, "ok")
    }
}

extension PendingSignUpRecord {
    fileprivate func with(attempts: Int) -> PendingSignUpRecord {
        var copy = self
        copy.attempts = attempts
        return copy
    }
}
