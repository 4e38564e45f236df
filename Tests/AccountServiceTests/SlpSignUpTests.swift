import Foundation
import GRDB
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// SLP's sign-up in one call and GetMe's three answers (issue 28, "Accounts"), and the SMS send limits
/// of phone verification, on the fixture's manual clock (2026-09-21 in Seoul).
final class SlpSignUpTests: XCTestCase {
    static let phone = "010-1234-5678"
    static let number = "+821012345678"

    /// An AccountService serving the repository's apps; the generic sign-in allowance is widened so the
    /// limits under test are the SMS ones.
    private func start(
        harness: ServiceHarness? = nil, dataDirectory: String? = nil, clock: ManualClock = ManualClock()
    ) async throws -> AccountFixture {
        try await AccountFixture.start(clock: clock, harness: harness, dataDirectory: dataDirectory) { options in
            options.apps = AccountFixture.appsFolder
            options.development = true
            options.signInRatePerAddress = "1000/60"
            options.signInRatePerConnection = "1000/60"
        }
    }

    private func matching(_ fixture: AccountFixture) -> YediSlp.Matching.Client {
        YediSlp.Matching.Client(fixture.client)
    }

    private let slp = AccountFixture.inApp("slp")

    private func ticket(_ fixture: AccountFixture, phone: String = phone, number: String = number, after: Int = 0)
        async throws -> String
    {
        let verified = try await fixture.verifyPhone(phone, number: number, after: after)
        guard case .signUp(let ticket)? = verified.outcome else {
            XCTFail("no ticket for a new number: \(verified)")
            return ""
        }
        return ticket.ticket
    }

    private func request(_ ticket: String, nickname: String = "새싹이", born: YediCommon.LocalDate? = nil)
        -> YediSlp.SignUpRequest
    {
        YediSlp.SignUpRequest(
            ticket: ticket, nickname: nickname, birthDate: born ?? .init(year: 1998, month: 3, day: 4),
            email: "Sprout@Example.com", gender: .female, pushToken: "fcm-token-1")
    }

    func testSlpSignUpCreatesTheAccountAndProfileInOneCallAndGetMeAnswersUnregisteredForTheTicket() async throws {
        let fixture = try await start()
        let matching = matching(fixture)
        let ticket = try await ticket(fixture)

        let beforeSignUp = try await matching.getMe(.init(ticket: ticket), options: slp)
        XCTAssertEqual(beforeSignUp.outcome, .unregistered, "a verified number without an account: not an error")
        let anonymous = await statusCode { _ = try await matching.getMe(.init(), options: self.slp) }
        XCTAssertEqual(anonymous, .unauthenticated)
        let forged = await statusCode { _ = try await matching.getMe(.init(ticket: "not-a-ticket"), options: self.slp) }
        XCTAssertEqual(forged, .unauthenticated)

        // 17 years minus a day on the Seoul date, an 11-character nickname, no gender: bad input.
        let young = await rpcError {
            _ = try await matching.signUp(
                self.request(ticket, born: .init(year: 2009, month: 9, day: 22)), options: self.slp)
        }
        XCTAssertEqual(young?.code, .invalidArgument)
        XCTAssertTrue(young?.message.hasPrefix("birth_date") == true, young?.message ?? "")
        let long = await rpcError {
            _ = try await matching.signUp(self.request(ticket, nickname: "열한글자의닉네임입니다요"), options: self.slp)
        }
        XCTAssertEqual(long?.code, .invalidArgument)
        XCTAssertTrue(long?.message.hasPrefix("nickname") == true, long?.message ?? "")
        var genderless = request(ticket)
        genderless.gender = .unspecified
        let noGender = await statusCode { _ = try await matching.signUp(genderless, options: self.slp) }
        XCTAssertEqual(noGender, .invalidArgument)

        let created = try await matching.signUp(
            request(ticket, born: .init(year: 2009, month: 9, day: 21)), options: slp)
        XCTAssertEqual(created.outcome, .signedUp)
        let user = try XCTUnwrap(created.account?.user)
        XCTAssertEqual(user.phone, "01012345678")
        XCTAssertEqual(created.myPage?.nickname, "새싹이")
        XCTAssertEqual(created.myPage?.email, "sprout@example.com")
        XCTAssertEqual(created.myPage?.gender, .female)
        let token = try XCTUnwrap(created.account?.session?.accessToken)
        let me = try await matching.getMe(.init(), options: fixture.options(token))
        XCTAssertEqual(me.outcome, .registered)
        XCTAssertEqual(me.myPage?.userID, user.id)
        let state = try await matching.getState(.init(), options: fixture.options(token))
        XCTAssertEqual(state.state, .general, "the profile exists: every Matching call works")
        // The push token is the platform's device of this session.
        let devices = try await fixture.service.environment.database.read { db in
            try String.fetchAll(db, sql: "SELECT token FROM device WHERE user_id = ?", arguments: [user.id])
        }
        XCTAssertEqual(devices, ["fcm-token-1"])

        let twice = try await matching.signUp(request(ticket, nickname: "다른이름"), options: slp)
        XCTAssertEqual(twice.outcome, .alreadyRegistered, "the same ticket again")
        let signedIn = try await matching.signUp(request("whatever"), options: fixture.options(token))
        XCTAssertEqual(signedIn.outcome, .alreadyRegistered, "a signed-in member")
        let used = await statusCode { _ = try await matching.getMe(.init(ticket: ticket), options: self.slp) }
        XCTAssertEqual(used, .unauthenticated, "a used ticket is no longer a sign-up")
        try await fixture.stop()
    }

    func testSlpSignUpRefusesBannedNicknamesInAnyCaseAndFullWidthAndTakenOnes() async throws {
        let fixture = try await start()
        let matching = matching(fixture)
        let ticket = try await ticket(fixture)
        // The app's banned words are 관리자, 운영자 and admin: matched after NFKC and case folding.
        for nickname in ["ADMIN", "SuperAdmin", "ａｄｍｉｎ", "Ａｄｍｉｎ님", "운영자다", "ＡＤＭＩＮ"] {
            let refused = try await matching.signUp(request(ticket, nickname: nickname), options: slp)
            XCTAssertEqual(refused.outcome, .nicknameRefused, nickname)
            XCTAssertTrue(refused.reason.hasPrefix("nickname"), refused.reason)
        }
        let checked = try await fixture.identity.checkNickname(.init(nickname: "ａｄｍｉｎ"), options: slp)
        XCTAssertFalse(checked.available, "CheckNickname applies the same rule")
        let first = try await matching.signUp(request(ticket, nickname: "새싹"), options: slp)
        XCTAssertEqual(first.outcome, .signedUp, "the refusals left the ticket working")

        let other = try await self.ticket(fixture, phone: "010-2222-3333", number: "+821022223333")
        let taken = try await matching.signUp(request(other, nickname: "새싹"), options: slp)
        XCTAssertEqual(taken.outcome, .nicknameRefused, "a nickname is one member's in SLP")
        let second = try await matching.signUp(request(other, nickname: "새싹둘"), options: slp)
        XCTAssertEqual(second.outcome, .signedUp)
        try await fixture.stop()
    }

    func testSlpSignUpWithASecondTicketOfARegisteredNumberIsAlreadyRegistered() async throws {
        let fixture = try await start()
        let matching = matching(fixture)
        let first = try await ticket(fixture)
        fixture.clock.advance(by: 5)
        let second = try await ticket(fixture, after: 1)
        let signedUp = try await matching.signUp(request(first), options: slp)
        XCTAssertEqual(signedUp.outcome, .signedUp)
        let again = try await matching.signUp(request(second), options: slp)
        XCTAssertEqual(again.outcome, .alreadyRegistered)
        try await fixture.stop()
    }

    /// SLP's sign-up ticket lasts 15 minutes (its app file's `sign_up_ticket_minutes`; the platform's
    /// default is 10): at 14:59 GetMe still answers UNREGISTERED and SignUp works, at 15:01 both refuse.
    func testSlpSignUpTicketLastsFifteenMinutesOnTheClock() async throws {
        let fixture = try await start()
        let matching = matching(fixture)
        let issuedAt = fixture.clock.nowMilliseconds
        let verified = try await fixture.verifyPhone(Self.phone, number: Self.number)
        guard case .signUp(let early)? = verified.outcome else { return XCTFail("no ticket: \(verified)") }
        XCTAssertEqual(early.expiresAtMs, issuedAt + 15 * 60 * 1_000, "the ticket says when it ends")
        let late = try await ticket(fixture, phone: "010-2345-6789", number: "+821023456789")

        fixture.clock.advance(by: 14 * 60 + 59)
        let before = try await matching.getMe(.init(ticket: early.ticket), options: slp)
        XCTAssertEqual(before.outcome, .unregistered, "14:59 after the code: the ticket still works")
        let signedUp = try await matching.signUp(request(early.ticket), options: slp)
        XCTAssertEqual(signedUp.outcome, .signedUp, "a sign-up at 14:59")

        fixture.clock.advance(by: 2)
        let after = await statusCode { _ = try await matching.getMe(.init(ticket: late), options: self.slp) }
        XCTAssertEqual(after, .unauthenticated, "15:01 after the code: the ticket has ended")
        let tooLate = await statusCode {
            _ = try await matching.signUp(self.request(late, nickname: "늦은이"), options: self.slp)
        }
        XCTAssertEqual(tooLate, .unauthenticated, "a sign-up at 15:01")
        try await fixture.stop()
    }

    /// The lifetime is the app file's: SLP's 15 minutes, the platform's 10 for an app that does not say.
    func testSlpSignUpTicketLifetimeIsTheAppFilesAndTenMinutesWithout() throws {
        let apps = try AppCatalog.load(folder: AccountFixture.appsFolder)
        XCTAssertEqual(IdentitySignIn.ticketLifetime(apps["slp"]), 15 * 60_000)
        XCTAssertEqual(IdentitySignIn.ticketLifetime(apps["zipadoo"]), 10 * 60_000)
        XCTAssertEqual(IdentitySignIn.ticketLifetime(nil), 10 * 60_000)
    }

    // MARK: Deletion

    /// A member without a password deletes the account with a fresh code: the partner of the active match
    /// is general at once, nothing in the database or the development SMS files names the number, and the
    /// number signs up again.
    func testSlpDeletingAnAccountTakesAFreshCodeFreesThePartnerAndLetsTheNumberSignUpAgain() async throws {
        let fixture = try await start()
        let matching = matching(fixture)
        let gone = try await matching.signUp(request(try await ticket(fixture), nickname: "떠날이"), options: slp)
        let goneID = try XCTUnwrap(gone.account?.user?.id)
        let goneToken = fixture.options(try XCTUnwrap(gone.account?.session?.accessToken))
        let partner = try await matching.signUp(
            request(try await ticket(fixture, phone: "010-2222-3333", number: "+821022223333"), nickname: "남을이"),
            options: slp)
        let partnerToken = fixture.options(try XCTUnwrap(partner.account?.session?.accessToken))
        let hall = SlpStoreContract.cityHall
        for token in [goneToken, partnerToken] {
            let entered = try await matching.enterQueue(
                .init(latitude: hall.latitude, longitude: hall.longitude), options: token)
            XCTAssertEqual(entered.outcome, .entered)
        }
        _ = try await matching.request(.init(otherID: goneID), options: partnerToken)
        let matched = try await matching.accept(
            .init(otherID: try XCTUnwrap(partner.myPage?.userID)), options: goneToken)
        XCTAssertEqual(matched.outcome, .matched)

        let withoutProof = await statusCode { _ = try await fixture.account.deleteAccount(.init(), options: goneToken) }
        XCTAssertEqual(withoutProof, .failedPrecondition, "a password-less account proves itself with a fresh code")
        fixture.clock.advance(by: 5)
        let fresh = try await fixture.identity.startPhoneVerification(.init(phone: Self.phone), options: slp)
        let code = try await fixture.textedCode(to: Self.number, after: 1)
        _ = try await fixture.account.deleteAccount(
            .init(proof: .init(proof: .phone(.init(verificationID: fresh.verificationID, code: code)))),
            options: goneToken)

        let state = try await matching.getState(.init(), options: partnerToken)
        XCTAssertEqual(state.state, .general, "the ex-partner is general, without a penalty")
        let entered = try await matching.enterQueue(
            .init(latitude: hall.latitude, longitude: hall.longitude), options: partnerToken)
        XCTAssertEqual(entered.outcome, .entered)
        let left = try await fixture.service.environment.database.read { db in
            try [
                "SELECT COUNT(*) FROM phone_verification WHERE phone = '\(Self.number)'",
                "SELECT COUNT(*) FROM sign_up_ticket WHERE subject = '\(Self.number)'",
                "SELECT COUNT(*) FROM user WHERE id = '\(goneID)' OR phone = '01012345678'",
                "SELECT COUNT(*) FROM slp_match_member WHERE user_id = '\(goneID)' OR partner_id = '\(goneID)'",
                "SELECT COUNT(*) FROM device WHERE user_id = '\(goneID)'",
                "SELECT COUNT(*) FROM slp_used_ticket WHERE user_id = '\(goneID)'",
            ].map { try Int.fetchOne(db, sql: $0) ?? -1 }
        }
        XCTAssertEqual(left, [0, 0, 0, 0, 0, 0])
        let texts = try DevelopmentFileSender.messages(
            in: fixture.service.environment.dataDirectory.appendingPathComponent("sent-sms"))
        XCTAssertEqual(texts.filter { $0.to == Self.number }.count, 0, "the development SMS files went too")
        XCTAssertEqual(texts.filter { $0.to == "+821022223333" }.count, 1, "the partner's stay")

        fixture.clock.advance(by: 5)
        let again = try await matching.signUp(request(try await ticket(fixture), nickname: "떠날이"), options: slp)
        XCTAssertEqual(again.outcome, .signedUp, "the number (and the nickname) sign up again")
        XCTAssertNotEqual(again.account?.user?.id, goneID)
        try await fixture.stop()
    }

    // MARK: SMS send limits

    /// A push to another member naming the deleted one (an SLP request's `from_id`) that is still waiting in
    /// the outbox at deletion is dropped with the account: once pushes flow again, the partner gets later
    /// ones, and no development push file names the deleted member.
    func testSlpAPushNamingADeletedMemberStillInTheOutboxIsNeverSent() async throws {
        let fixture = try await start()
        let env = fixture.service.environment
        let sentPush = env.dataDirectory.appendingPathComponent("sent-push")
        let gate = GatedPushSender(next: try DevelopmentFileSender(.push, in: env))
        env.outbox.register(gate)
        let matching = matching(fixture)
        let gone = try await matching.signUp(request(try await ticket(fixture), nickname: "떠날이"), options: slp)
        let goneID = try XCTUnwrap(gone.account?.user?.id)
        let goneToken = fixture.options(try XCTUnwrap(gone.account?.session?.accessToken))
        var staysRequest = request(
            try await ticket(fixture, phone: "010-2222-3333", number: "+821022223333"), nickname: "남을이")
        staysRequest.pushToken = "stays-phone"
        let stays = try await matching.signUp(staysRequest, options: slp)
        let staysID = try XCTUnwrap(stays.account?.user?.id)
        var thirdRequest = request(
            try await ticket(fixture, phone: "010-4444-5555", number: "+821044445555"), nickname: "셋째")
        thirdRequest.pushToken = "third-phone"
        let third = try await matching.signUp(thirdRequest, options: slp)
        let thirdToken = fixture.options(try XCTUnwrap(third.account?.session?.accessToken))
        let hall = SlpStoreContract.cityHall
        for token in [goneToken, fixture.options(try XCTUnwrap(stays.account?.session?.accessToken)), thirdToken] {
            _ = try await matching.enterQueue(.init(latitude: hall.latitude, longitude: hall.longitude), options: token)
        }
        let asked = try await matching.request(.init(otherID: staysID), options: goneToken)
        XCTAssertEqual(asked.outcome, .sent, "a push to the partner's device naming the asker, held in the outbox")
        let held = try await env.database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox WHERE peer = 'push'") ?? 0
        }
        XCTAssertEqual(held, 1)

        fixture.clock.advance(by: 5)
        let fresh = try await fixture.identity.startPhoneVerification(.init(phone: Self.phone), options: slp)
        let code = try await fixture.textedCode(to: Self.number, after: 1)
        _ = try await fixture.account.deleteAccount(
            .init(proof: .init(proof: .phone(.init(verificationID: fresh.verificationID, code: code)))),
            options: goneToken)
        gate.open()
        _ = try await matching.request(.init(otherID: staysID), options: thirdToken)
        let later = try await eventually(timeout: 20) {
            try DevelopmentFileSender.messages(in: sentPush).contains { $0.to == "stays-phone" }
        }
        XCTAssertTrue(later, "pushes flow again: the later request reached the partner")
        let pushes = try DevelopmentFileSender.messages(in: sentPush)
        XCTAssertEqual(pushes.count, 1, "\(pushes)")
        XCTAssertFalse(
            pushes.contains { $0.values.values.contains(goneID) || $0.text.contains("떠날이") },
            "no push file names the deleted member: \(pushes)")
        try await fixture.stop()
    }

    func testSlpSmsSendsOnePer4SecondsAndTheSixthInAnHourLocksTheNumberAcrossARestart() async throws {
        let clock = ManualClock()
        let harness = try ServiceHarness()
        var fixture = try await start(harness: harness, clock: clock)
        let data = fixture.service.environment.dataDirectory.path
        func send(_ phone: String = Self.phone) async -> RPCError? {
            await rpcError {
                _ = try await fixture.identity.startPhoneVerification(.init(phone: phone), options: self.slp)
            }
        }
        let sent1 = await send()
        XCTAssertNil(sent1)
        clock.advance(by: 3.9)
        let early = await send()
        XCTAssertEqual(early?.code, .resourceExhausted, "a resend within 4 s")
        XCTAssertEqual(early?.metadata["retry-after"], "1")
        clock.advance(by: 0.2)
        let sent2 = await send()
        XCTAssertNil(sent2, "4 s after the last code")
        for _ in 3...5 {
            clock.advance(by: 60)
            let sent3 = await send()
            XCTAssertNil(sent3)
        }
        clock.advance(by: 60)
        let sixth = await send()
        XCTAssertEqual(sixth?.code, .resourceExhausted, "the sixth code within the hour")
        XCTAssertEqual(sixth?.metadata["retry-after"], "3600", "locks the number for an hour")

        // A restart on the same database keeps the lock.
        try await fixture.stop()
        clock.advance(by: 1_800)
        fixture = try await start(harness: harness, dataDirectory: data, clock: clock)
        let afterRestart = await send()
        XCTAssertEqual(afterRestart?.code, .resourceExhausted, "the lock survived the restart")
        XCTAssertEqual(afterRestart?.metadata["retry-after"], "1800")
        clock.advance(by: 1_800)
        let sent4 = await send()
        XCTAssertNil(sent4, "an hour after the sixth attempt the number gets codes again")
        let sent5 = await send("010-2222-3333")
        XCTAssertNil(sent5, "another number has its own allowance")
        try await fixture.stop()
    }

    func testSlpSmsSendsAreFivePerHourPerClientAddress() async throws {
        let fixture = try await start()
        var codes: [StatusCode] = []
        for index in 1...6 {
            codes.append(
                await statusCode {
                    _ = try await fixture.identity.startPhoneVerification(
                        .init(phone: "010-3000-000\(index)"), options: self.slp)
                })
        }
        XCTAssertEqual(codes, [.ok, .ok, .ok, .ok, .ok, .resourceExhausted], "six numbers from one address")
        fixture.clock.advance(by: 3_600)
        let nextHour = await statusCode {
            _ = try await fixture.identity.startPhoneVerification(.init(phone: "010-3000-0007"), options: self.slp)
        }
        XCTAssertEqual(nextHour, .ok)
        try await fixture.stop()
    }

    func testSlpFiveWrongCodesVoidTheCode() async throws {
        let fixture = try await start()
        let started = try await fixture.identity.startPhoneVerification(.init(phone: Self.phone), options: slp)
        let code = try await fixture.textedCode(to: Self.number)
        let wrong = code == "000000" ? "111111" : "000000"
        for _ in 1...5 {
            let refused = await statusCode {
                _ = try await fixture.identity.verifyPhone(
                    .init(code: .init(verificationID: started.verificationID, code: wrong)), options: self.slp)
            }
            XCTAssertEqual(refused, .unauthenticated)
        }
        let right = await statusCode {
            _ = try await fixture.identity.verifyPhone(
                .init(code: .init(verificationID: started.verificationID, code: code)), options: self.slp)
        }
        XCTAssertEqual(right, .unauthenticated, "after 5 wrong codes the right one is void too")
        try await fixture.stop()
    }

    func testSlpThePhoneSendThrottleRulesAtTheirEdges() {
        let throttle = PhoneSendThrottle()
        var number: PhoneSendRecord?
        var address: PhoneSendRecord?
        XCTAssertEqual(throttle.begin(number: &number, address: &address, now: 0), .admitted)
        XCTAssertEqual(
            throttle.begin(number: &number, address: &address, now: 3_999), .cooldown(untilMilliseconds: 4_000))
        for send in 1...4 {
            XCTAssertEqual(throttle.begin(number: &number, address: &address, now: Int64(send) * 4_000), .admitted)
        }
        XCTAssertEqual(
            throttle.begin(number: &number, address: &address, now: 20_000),
            .numberLocked(untilMilliseconds: 3_620_000))
        XCTAssertEqual(number?.sends, 5, "a refusal is not counted")
        XCTAssertEqual(
            throttle.begin(number: &number, address: &address, now: 3_619_999),
            .numberLocked(untilMilliseconds: 3_620_000))
        XCTAssertEqual(throttle.begin(number: &number, address: &address, now: 3_620_000), .admitted)
        XCTAssertEqual(number?.sends, 1, "a new hour after the lock")
    }
}
