import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Housetainer's `Members` over TLS on the fixture's manual clock: sign-in, invitation codes and their
/// refusals, the quota, signup, nicknames, the waitlist and member pages.
final class HousetainerMembersTests: HousetainerTestCase {
    private static let week: TimeInterval = 7 * 86_400

    func testHousetainerSignInIsUnregisteredUntilSignUpThenSignsIn() async throws {
        let host = try await founder("host", nickname: "호스트")
        let first = try await signIn("minji", email: "Minji@Example.kr")
        XCTAssertEqual(first.outcome, .unregistered)
        XCTAssertEqual(first.email, "minji@example.kr")
        XCTAssertEqual(first.ticketExpiresAtMs, fixture.clock.nowMilliseconds + 30 * 60 * 1_000)
        let code = try await invite("minji@example.kr", by: host)
        let verified = try await members.verifyInvitation(
            .init(ticket: first.ticket, code: code), options: Self.anonymous)
        XCTAssertEqual(verified.inviterNickname, "호스트")
        let joined = try await members.signUp(
            .init(ticket: first.ticket, code: code, nickname: "민지", acceptedTerms: Self.terms), options: Self.anonymous)
        XCTAssertNotNil(joined.session)
        let again = try await signIn("minji", email: "minji@example.kr")
        XCTAssertEqual(again.outcome, .signedIn)
        XCTAssertEqual(again.memberID, joined.memberID)
        // Another provider with the same address is the same member.
        let kakao = try await members.signIn(
            .init(assertion: .init(provider: "kakao", token: "dev:kakao:9:minji@example.kr")), options: Self.anonymous)
        XCTAssertEqual(kakao.memberID, joined.memberID)
        await assertRefused(.unauthenticated, field: "ticket") {
            try await members.signUp(
                .init(ticket: first.ticket, code: code, nickname: "민지둘", acceptedTerms: Self.terms),
                options: Self.anonymous)
        }
    }

    func testHousetainerVerifyInvitationRefusalsAndExpiryAtSevenDaysByTheClockAlone() async throws {
        let host = try await founder("host", nickname: "호스트")
        let ticket = try await ticket("minji", email: "minji@example.kr")
        for bad in ["1234567", "123456789", "1234567a", ""] {
            await assertRefused(.invalidArgument, field: "code") {
                try await members.verifyInvitation(.init(ticket: ticket, code: bad), options: Self.anonymous)
            }
        }
        await assertRefused(.notFound, field: "code") {
            try await members.verifyInvitation(.init(ticket: ticket, code: "00000000"), options: Self.anonymous)
        }
        let other = try await invite("someone@example.com", by: host)
        await assertRefused(.permissionDenied, field: "code") {
            try await members.verifyInvitation(.init(ticket: ticket, code: other), options: Self.anonymous)
        }
        let code = try await invite("minji@example.kr", by: host)
        await assertRefused(.unauthenticated, field: "ticket") {
            try await members.verifyInvitation(.init(ticket: "nope", code: code), options: Self.anonymous)
        }
        fixture.clock.advance(by: Self.week - 1)
        // Tickets live 30 minutes and tokens 15: new ones a week later.
        let later = try await self.ticket("minji", email: "minji@example.kr")
        let hostNow = try fixture.token("host", app: "housetainer", role: "member")
        _ = try await members.verifyInvitation(.init(ticket: later, code: code), options: Self.anonymous)
        let mine = try await members.listMyInvitations(.init(), options: hostNow)
        XCTAssertEqual(mine.invitations.first { $0.code == code }?.status, .sent, "verifying consumes nothing")
        fixture.clock.advance(by: 2)
        await assertRefused(.failedPrecondition, field: "code: expired") {
            try await members.verifyInvitation(.init(ticket: later, code: code), options: Self.anonymous)
        }
        let expired = try await members.listMyInvitations(.init(), options: hostNow)
        XCTAssertEqual(expired.invitations.first { $0.code == code }?.status, .expired)
    }

    func testHousetainerTenFailuresPerTicketPerHourRefuseEvenTheRightCode() async throws {
        let host = try await founder("host", nickname: "호스트")
        let code = try await invite("minji@example.kr", by: host)
        let ticket = try await ticket("minji", email: "minji@example.kr")
        for _ in 0..<10 {
            let (got, _) = await status {
                try await members.verifyInvitation(.init(ticket: ticket, code: "00000000"), options: Self.anonymous)
            }
            XCTAssertEqual(got, .notFound)
        }
        await assertRefused(.resourceExhausted, field: "code") {
            try await members.verifyInvitation(.init(ticket: ticket, code: code), options: Self.anonymous)
        }
        fixture.clock.advance(by: 3_600)
        let later = try await self.ticket("minji", email: "minji@example.kr")
        _ = try await members.verifyInvitation(.init(ticket: later, code: code), options: Self.anonymous)
    }

    func testHousetainerQuotaCountsSentAndJoinedButNeverExpired() async throws {
        _ = try await join("a", nickname: "에이", invitedBy: try await founder("host", nickname: "호스트"))  // J
        fixture.clock.advance(by: 1)  // one order for "newest first"
        _ = try await invite("b@example.com", by: try fixture.token("host", app: "housetainer", role: "member"))
        fixture.clock.advance(by: Self.week)  // b's S code expires
        let host = try fixture.token("host", app: "housetainer", role: "member")
        _ = try await invite("c@example.com", by: host)  // S
        fixture.clock.advance(by: 1)
        _ = try await invite("d@example.com", by: host)  // S: J + S + S = 3, the expired one not counted
        await assertRefused(.resourceExhausted, field: "invitations") {
            try await members.createInvitation(.init(inviteeEmail: "e@example.com", inviteeName: "이"), options: host)
        }
        let statuses = try await members.listMyInvitations(.init(), options: host).invitations.map(\.status)
        XCTAssertEqual(statuses, [.sent, .sent, .expired, .joined], "newest first")
        // A J code never expires.
        fixture.clock.advance(by: 10 * Self.week)
        let later = try await members.listMyInvitations(
            .init(), options: try fixture.token("host", app: "housetainer", role: "member")
        ).invitations.map(\.status)
        XCTAssertEqual(later, [.expired, .expired, .expired, .joined])
    }

    func testHousetainerInvitationRefusesMembersOneselfAndBadFields() async throws {
        let host = try await founder("host", nickname: "호스트")
        let guest = try await join("guest", nickname: "손님", invitedBy: host)
        await assertRefused(.failedPrecondition, field: "invitee_email") {
            try await members.createInvitation(
                .init(inviteeEmail: "guest@example.kr", inviteeName: "손님"), options: guest.options)
        }
        await assertRefused(.failedPrecondition, field: "invitee_email") {
            try await members.createInvitation(
                .init(inviteeEmail: "GUEST@example.kr", inviteeName: "나"), options: host)
        }
        await assertRefused(.invalidArgument, field: "invitee_email") {
            try await members.createInvitation(.init(inviteeEmail: "nobody@", inviteeName: "이"), options: host)
        }
        await assertRefused(.invalidArgument, field: "invitee_name") {
            try await members.createInvitation(.init(inviteeEmail: "x@example.com", inviteeName: " "), options: host)
        }
        let code = try await invite("x@example.co.kr", by: host)
        XCTAssertNotNil(code.range(of: "^[0-9]{8}$", options: .regularExpression))
    }

    func testHousetainerSignUpFailsPreciselyAndAnAbandonedSignUpLeavesTheCodeSent() async throws {
        let host = try await founder("host", nickname: "호스트")
        let code = try await invite("minji@example.kr", by: host)
        let ticket = try await ticket("minji", email: "minji@example.kr")
        await assertRefused(.alreadyExists, field: "nickname") {
            try await members.signUp(
                .init(ticket: ticket, code: code, nickname: "호스트", acceptedTerms: Self.terms), options: Self.anonymous)
        }
        await assertRefused(.invalidArgument, field: "accepted_terms") {
            try await members.signUp(
                .init(ticket: ticket, code: code, nickname: "민지", acceptedTerms: Array(Self.terms.prefix(2))),
                options: Self.anonymous)
        }
        await assertRefused(.invalidArgument, field: "code") {
            try await members.signUp(
                .init(ticket: ticket, code: "1234", nickname: "민지", acceptedTerms: Self.terms), options: Self.anonymous)
        }
        let status = try await members.listMyInvitations(.init(), options: host).invitations.first?.status
        XCTAssertEqual(status, .sent, "failed and abandoned signups leave the code S")
        // The code used by someone else first: no longer S.
        let other = try await self.ticket("minji2", email: "minji@example.kr")
        _ = try await members.signUp(
            .init(ticket: other, code: code, nickname: "민지", acceptedTerms: Self.terms), options: Self.anonymous)
        await assertRefused(.alreadyExists, field: "ticket") {
            try await members.signUp(
                .init(ticket: ticket, code: code, nickname: "민지둘", acceptedTerms: Self.terms),
                options: Self.anonymous)
        }
    }

    func testHousetainerNicknamesInvalidTakenAndBanned() async throws {
        _ = try await founder("host", nickname: "호스트")
        for bad in ["민지1", "민 지", "민지😀", "abcdefghijk", "", "관리자", "min-ji"] {
            let answer = try await members.checkNickname(.init(nickname: bad), options: Self.anonymous)
            XCTAssertEqual(answer.availability, .invalid, bad)
        }
        let taken = try await members.checkNickname(.init(nickname: "호스트"), options: Self.anonymous)
        XCTAssertEqual(taken.availability, .taken)
        XCTAssertEqual(taken.reason, "이미 사용중인 닉네임입니다.")
        let free = try await members.checkNickname(.init(nickname: "abcdefghij"), options: Self.anonymous)
        XCTAssertEqual(free.availability, .available)
        // NFC: a decomposed 한 is the syllable.
        let decomposed = try await members.checkNickname(
            .init(nickname: "\u{1112}\u{1161}\u{11AB}"), options: Self.anonymous)
        XCTAssertEqual(decomposed.availability, .available)
    }

    func testHousetainerWaitlistOneEntryPerAddressListedByAdmins() async throws {
        let ticket = try await ticket("minji", email: "minji@example.kr")
        let admin = try fixture.token("ht-admin", app: "housetainer", role: "admin")
        let member = try await founder("host", nickname: "호스트")
        await assertRefused(.invalidArgument, field: "email") {
            try await members.joinWaitlist(
                .init(ticket: ticket, email: "minji", snsURL: "https://x.com/a", instagramID: "a"),
                options: Self.anonymous)
        }
        await assertRefused(.invalidArgument, field: "sns_url") {
            try await members.joinWaitlist(
                .init(ticket: ticket, email: "m@example.kr", snsURL: "javascript:alert(1)", instagramID: "a"),
                options: Self.anonymous)
        }
        await assertRefused(.invalidArgument, field: "instagram_id") {
            try await members.joinWaitlist(
                .init(ticket: ticket, email: "m@example.kr", snsURL: "https://x.com/a", instagramID: "@minji"),
                options: Self.anonymous)
        }
        let first = try await members.joinWaitlist(
            .init(ticket: ticket, email: "m@example.kr", snsURL: "https://x.com/a", instagramID: "min.ji_"),
            options: Self.anonymous)
        XCTAssertTrue(first.created)
        let second = try await members.joinWaitlist(
            .init(ticket: ticket, email: "M@example.kr", snsURL: "http://blog.example.kr", instagramID: "minji"),
            options: Self.anonymous)
        XCTAssertFalse(second.created)
        let list = try await members.listWaitlist(.init(), options: admin)
        XCTAssertEqual(list.entries.map(\.instagramID), ["minji"])
        let (denied, _) = await status { try await members.listWaitlist(.init(), options: member) }
        XCTAssertEqual(denied, .permissionDenied, "admin methods refuse a member token")
    }

    func testHousetainerMemberPageShowsBuddiesNicknamesAndOnlyTheOwnerSeesInvitations() async throws {
        let host = try await founder("host", nickname: "호스트")
        let hostID = "host"
        let guest = try await join("guest", nickname: "손님", invitedBy: host)
        _ = try await invite("later@example.com", by: host)
        let seenByGuest = try await members.getMember(.init(memberID: hostID), options: guest.options)
        XCTAssertEqual(seenByGuest.buddies, ["손님"])
        XCTAssertTrue(seenByGuest.invitations.isEmpty, "another member never sees invitations or addresses")
        let own = try await members.getMember(.init(memberID: hostID), options: host)
        XCTAssertEqual(own.invitations.count, 2)
        let guestPage = try await members.getMember(.init(memberID: guest.id), options: host)
        XCTAssertEqual(guestPage.inviterNickname, "호스트")
        XCTAssertEqual(guestPage.type, .ordinary)
        await assertRefused(.notFound, field: "member_id") {
            try await members.getMember(.init(memberID: "nobody"), options: host)
        }
        let updated = try await members.updateMember(
            .init(
                gender: .female, birthday: .init(year: 1990, month: 2, day: 3), nickname: "새손님",
                photoImageID: "01hphoto"),
            options: guest.options)
        XCTAssertEqual(updated.nickname, "새손님")
        XCTAssertEqual(updated.photoImageID, "01hphoto")
        XCTAssertEqual(updated.gender, .female)
        await assertRefused(.alreadyExists, field: "nickname") {
            try await members.updateMember(.init(nickname: "호스트"), options: guest.options)
        }
        await assertRefused(.invalidArgument, field: "nickname") {
            try await members.updateMember(.init(nickname: "손님 1"), options: guest.options)
        }
    }

    func testHousetainerDirectoryCarriesTheNicknamePhotoAndMemberType() async throws {
        let host = try await founder("host", nickname: "호스트")
        let guest = try await join("guest", nickname: "손님", invitedBy: host)
        _ = try await members.updateMember(.init(nickname: "새이름", photoImageID: "01hphoto"), options: guest.options)
        let content = try RPCClient(
            configuration: fixture.harness.clientConfiguration(
                port: try await fixture.service.port, identity: "content"))
        let run = Task { await content.run() }
        let users = try await YediAccount.AccountService.Client(content).batchGetUsers(.init(userIDs: [guest.id]))
        XCTAssertEqual(users.users.first?.name, "새이름", "a Housetainer member's name is their nickname")
        XCTAssertEqual(users.users.first?.profileImageID, "01hphoto")
        XCTAssertEqual(users.users.first?.memberType, "a")
        content.beginGracefulShutdown()
        await run.value
    }

    func testHousetainerAnAdminsCodeSignsUpTheFirstMembersWhileCodesAreRequired() async throws {
        let admin = try fixture.token("ht-admin", app: "housetainer", role: "admin")
        var codes: [String] = []
        for index in 0..<4 {
            let issued = try await members.issueInvitation(
                .init(inviteeEmail: "founder\(index)@example.kr", inviteeName: "창립자"), options: admin)
            XCTAssertEqual(issued.status, .sent)
            codes.append(issued.code)
        }
        XCTAssertEqual(Set(codes).count, 4, "no quota for an admin's codes")
        let mailed = try await eventually(timeout: 10) {
            try self.fixture.sentMail().contains { $0.to == "founder0@example.kr" && $0.values["code"] == codes[0] }
        }
        XCTAssertTrue(mailed, "mailed as members' codes are")
        let ticket = try await ticket("founder0", email: "founder0@example.kr")
        let (noCode, _) = await status {
            try await members.signUp(
                .init(ticket: ticket, nickname: "창립자", acceptedTerms: Self.terms), options: Self.anonymous)
        }
        XCTAssertNotEqual(noCode, .ok, "the app requires a code")
        let verified = try await members.verifyInvitation(
            .init(ticket: ticket, code: codes[0]), options: Self.anonymous)
        XCTAssertEqual(verified.inviterNickname, "")
        let joined = try await members.signUp(
            .init(ticket: ticket, code: codes[0], nickname: "창립자", acceptedTerms: Self.terms), options: Self.anonymous)
        let founder = fixture.options(try XCTUnwrap(joined.session?.accessToken))
        let page = try await members.getMember(.init(memberID: joined.memberID), options: founder)
        XCTAssertEqual(page.inviterNickname, "")
        XCTAssertFalse(page.inviterLeft)
        // The founder invites as any member.
        let guest = try await join("guest", nickname: "손님", invitedBy: founder)
        let guestPage = try await members.getMember(.init(memberID: guest.id), options: founder)
        XCTAssertEqual(guestPage.inviterNickname, "창립자")

        await assertRefused(.permissionDenied, field: "") {
            try await members.issueInvitation(.init(inviteeEmail: "x@example.kr", inviteeName: "엑스"), options: founder)
        }
        await assertRefused(.invalidArgument, field: "invitee_email") {
            try await members.issueInvitation(.init(inviteeEmail: "x@", inviteeName: "엑스"), options: admin)
        }
        await assertRefused(.failedPrecondition, field: "invitee_email") {
            try await members.issueInvitation(
                .init(inviteeEmail: "founder0@example.kr", inviteeName: "창립자"), options: admin)
        }
    }

    func testHousetainerAdminsSetMemberTypesShownOnPagesAndInTheDirectory() async throws {
        let host = try await founder("host", nickname: "호스트")
        let guest = try await join("guest", nickname: "손님", invitedBy: host)
        let admin = try fixture.token("ht-admin", app: "housetainer", role: "admin")
        let page = try await members.setMemberType(.init(memberID: guest.id, type: .housetainer), options: admin)
        XCTAssertEqual(page.type, .housetainer)
        XCTAssertTrue(page.invitations.isEmpty, "the admin gets the page others see")
        let seen = try await members.getMember(.init(memberID: guest.id), options: host)
        XCTAssertEqual(seen.type, .housetainer)
        _ = try await members.setMemberType(.init(memberID: guest.id, type: .hometainer), options: admin)
        let own = try await members.getMember(.init(memberID: guest.id), options: guest.options)
        XCTAssertEqual(own.type, .hometainer)
        let content = try RPCClient(
            configuration: fixture.harness.clientConfiguration(
                port: try await fixture.service.port, identity: "content"))
        let run = Task { await content.run() }
        let users = try await YediAccount.AccountService.Client(content).batchGetUsers(.init(userIDs: [guest.id]))
        XCTAssertEqual(users.users.first?.memberType, "h", "what ContentService's directory shows")
        content.beginGracefulShutdown()
        await run.value

        await assertRefused(.permissionDenied, field: "") {
            try await members.setMemberType(.init(memberID: guest.id, type: .housetainer), options: host)
        }
        await assertRefused(.invalidArgument, field: "type") {
            try await members.setMemberType(.init(memberID: guest.id, type: .unspecified), options: admin)
        }
        await assertRefused(.notFound, field: "member_id") {
            try await members.setMemberType(.init(memberID: "nobody", type: .housetainer), options: admin)
        }
        await assertRefused(.invalidArgument, field: "member_id") {
            try await members.setMemberType(.init(memberID: "", type: .housetainer), options: admin)
        }
        let unchanged = try await members.getMember(.init(memberID: guest.id), options: host).type
        XCTAssertEqual(unchanged, .hometainer, "refused calls change nothing")
    }

    func testHousetainerCodesDrawEveryDigitInEveryPositionUniformly() {
        var generator = XorShift64(state: 0x2929_2929_2929_2929)
        var counts = Array(repeating: Array(repeating: 0, count: 10), count: 8)
        let draws = 100_000
        for _ in 0..<draws {
            for (position, digit) in InvitationCode.draw(using: &generator).enumerated() {
                counts[position][Int(String(digit))!] += 1
            }
        }
        for position in 0..<8 {
            for digit in 0..<10 {
                let share = Double(counts[position][digit]) / Double(draws)
                XCTAssertTrue((0.09...0.11).contains(share), "digit \(digit) at \(position): \(share)")
            }
        }
    }
}

/// Marsaglia's xorshift64, seeded: the distribution test draws the same codes every run.
private struct XorShift64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}
