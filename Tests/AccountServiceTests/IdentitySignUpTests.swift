import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Verified identities end to end: tickets bound to their app, the development verifier, the nickname
/// rule, each app's sign-in methods, and DeleteAccount with a fresh proof instead of a password.
final class IdentitySignUpTests: XCTestCase {
    private func ticket(_ response: YediAccount.VerifyIdentityResponse) throws -> YediAccount.SignUpTicket {
        guard case .signUp(let ticket)? = response.outcome else {
            XCTFail("expected a ticket: \(response)")
            throw RPCError(code: .internalError, message: "no ticket")
        }
        return ticket
    }

    func testIdentityTicketOfOneAppCannotCreateAnAccountInAnother() async throws {
        let fixture = try await AccountFixture.startServingApps()
        let slpTicket = try ticket(try await fixture.verifyPhone("010-1234-5678", number: "+821012345678"))
        let inHousetainer = await statusCode {
            _ = try await fixture.identity.completeIdentitySignUp(
                .init(ticket: slpTicket.ticket, nickname: "집주인"), options: AccountFixture.inApp("housetainer"))
        }
        XCTAssertEqual(inHousetainer, .unauthenticated, "an SLP ticket is no ticket in Housetainer")
        let inSLP = try await fixture.identity.completeIdentitySignUp(
            .init(ticket: slpTicket.ticket, nickname: "새싹"), options: AccountFixture.inApp("slp"))
        XCTAssertNotNil(inSLP.session)
        try await fixture.stop()
    }

    func testIdentityDevelopmentAssertionSignsUpThenSignsInWithAProvider() async throws {
        let fixture = try await AccountFixture.startServingApps()
        let assertion = YediAccount.ProviderAssertion(provider: "kakao", token: "dev:kakao:alice:alice@example.com")
        let first = try ticket(
            try await fixture.identity.verifyProvider(
                .init(assertion: assertion), options: AccountFixture.inApp("zipadoo")))
        XCTAssertEqual(first.identity, "kakao:alice")
        XCTAssertEqual(first.email, "alice@example.com")
        let created = try await fixture.identity.completeIdentitySignUp(
            .init(ticket: first.ticket, nickname: "앨리스"), options: AccountFixture.inApp("zipadoo"))
        XCTAssertEqual(created.user?.email, "alice@example.com")
        let again = try await fixture.identity.verifyProvider(
            .init(assertion: assertion), options: AccountFixture.inApp("zipadoo"))
        guard case .signedIn(let session)? = again.outcome else { return XCTFail("no session: \(again)") }
        XCTAssertEqual(session.user?.id, created.user?.id)

        // The same provider account in SLP (which signs in by phone only) is refused by its app file.
        let slp = await statusCode {
            _ = try await fixture.identity.verifyProvider(
                .init(assertion: assertion), options: AccountFixture.inApp("slp"))
        }
        XCTAssertEqual(slp, .permissionDenied, "VerifyProvider does not serve SLP")
        let mismatched = await statusCode {
            _ = try await fixture.identity.verifyProvider(
                .init(assertion: .init(provider: "kakao", token: "dev:google:alice")),
                options: AccountFixture.inApp("zipadoo"))
        }
        XCTAssertEqual(mismatched, .unauthenticated, "a development assertion names its own provider")

        // Housetainer's tickets sign up only through Members/SignUp, with an invitation and the terms.
        let housetainer = try ticket(
            try await fixture.identity.verifyProvider(
                .init(assertion: .init(provider: "google", token: "dev:google:bob:bob@example.com")),
                options: AccountFixture.inApp("housetainer")))
        let refused = await statusCode {
            _ = try await fixture.identity.completeIdentitySignUp(
                .init(ticket: housetainer.ticket, nickname: "밥"), options: AccountFixture.inApp("housetainer"))
        }
        XCTAssertEqual(refused, .failedPrecondition)
        try await fixture.stop()
    }

    func testIdentityDevelopmentAssertionsAreRefusedOutsideDevelopment() async throws {
        let fixture = try await AccountFixture.startServingApps(development: false)
        let status = await statusCode {
            _ = try await fixture.identity.verifyProvider(
                .init(assertion: .init(provider: "google", token: "dev:google:alice")),
                options: AccountFixture.inApp("housetainer"))
        }
        XCTAssertEqual(status, .unauthenticated)
        let unconfigured = await statusCode {
            _ = try await fixture.identity.verifyProvider(
                .init(assertion: .init(provider: "google", token: "eyJ.real.token")),
                options: AccountFixture.inApp("housetainer"))
        }
        XCTAssertEqual(unconfigured, .unavailable, "no Google verifier configured in this process")
        try await fixture.stop()
    }

    func testIdentityNicknameRuleBannedWordsLengthAndUniqueness() async throws {
        let fixture = try await AccountFixture.startServingApps()
        let first = try ticket(try await fixture.verifyPhone("010-1234-5678", number: "+821012345678"))
        for (nickname, expected) in [("운영자다", StatusCode.invalidArgument), ("열한글자닉네임입니다요", .invalidArgument)] {
            let status = await statusCode {
                _ = try await fixture.identity.completeIdentitySignUp(
                    .init(ticket: first.ticket, nickname: nickname), options: AccountFixture.inApp("slp"))
            }
            XCTAssertEqual(status, expected, nickname)
        }
        _ = try await fixture.identity.completeIdentitySignUp(
            .init(ticket: first.ticket, nickname: "Sprout"), options: AccountFixture.inApp("slp"))
        fixture.clock.advance(by: 31)
        let second = try ticket(try await fixture.verifyPhone("010-2222-3333", number: "+821022223333"))
        let taken = await statusCode {
            _ = try await fixture.identity.completeIdentitySignUp(
                .init(ticket: second.ticket, nickname: "sprout"), options: AccountFixture.inApp("slp"))
        }
        XCTAssertEqual(taken, .alreadyExists, "nicknames are unique per app regardless of case")
        let kept = try await fixture.identity.completeIdentitySignUp(
            .init(ticket: second.ticket, nickname: "sprout2"), options: AccountFixture.inApp("slp"))
        XCTAssertNotNil(kept.session, "the refused nickname left the ticket usable")
        try await fixture.stop()
    }

    /// CheckNickname answers what CompleteIdentitySignUp would: free, taken (regardless of case, in the
    /// call's app only), or the rule it breaks; YeDi has no nicknames.
    func testIdentityCheckNicknameAnswersAsSignUpWould() async throws {
        let fixture = try await AccountFixture.startServingApps()
        let slp = AccountFixture.inApp("slp")
        func check(_ nickname: String, _ options: CallOptions) async throws -> YediAccount.CheckNicknameResponse {
            try await fixture.identity.checkNickname(.init(nickname: nickname), options: options)
        }
        let before = try await check("Sprout", slp)
        XCTAssertTrue(before.available)
        XCTAssertEqual(before.reason, "")
        let first = try ticket(try await fixture.verifyPhone("010-1234-5678", number: "+821012345678"))
        _ = try await fixture.identity.completeIdentitySignUp(
            .init(ticket: first.ticket, nickname: "Sprout"), options: slp)
        let taken = try await check("sPROUT", slp)
        XCTAssertFalse(taken.available)
        XCTAssertTrue(taken.reason.contains("already in use"), taken.reason)
        let inHousetainer = try await check("Sprout", AccountFixture.inApp("housetainer"))
        XCTAssertTrue(inHousetainer.available, "another app's nicknames are its own")
        let banned = try await check("운영자다", slp)
        XCTAssertFalse(banned.available)
        XCTAssertTrue(banned.reason.hasPrefix("nickname:"), banned.reason)
        let empty = try await check("", slp)
        XCTAssertFalse(empty.available)
        let inYedi = await statusCode { _ = try await check("Sprout", AccountFixture.inApp("yedi")) }
        XCTAssertEqual(inYedi, .permissionDenied, "YeDi's callers do not reach it")
        try await fixture.stop()
    }

    func testIdentityDeleteAccountWithoutAPasswordTakesAFreshProof() async throws {
        let fixture = try await AccountFixture.startServingApps()
        let mine = try ticket(try await fixture.verifyPhone("010-1234-5678", number: "+821012345678"))
        let created = try await fixture.identity.completeIdentitySignUp(
            .init(ticket: mine.ticket, nickname: "지울사람"), options: AccountFixture.inApp("slp"))
        let token = try XCTUnwrap(created.session?.accessToken)

        let withoutProof = await statusCode {
            _ = try await fixture.account.deleteAccount(.init(), options: fixture.options(token))
        }
        XCTAssertEqual(withoutProof, .failedPrecondition)

        // A fresh code for another number proves that number, not this account.
        fixture.clock.advance(by: 31)
        let other = try await fixture.identity.startPhoneVerification(
            .init(phone: "010-2222-3333"), options: AccountFixture.inApp("slp"))
        let otherCode = try await fixture.textedCode(to: "+821022223333")
        let foreign = await statusCode {
            _ = try await fixture.account.deleteAccount(
                .init(proof: .init(proof: .phone(.init(verificationID: other.verificationID, code: otherCode)))),
                options: fixture.options(token))
        }
        XCTAssertEqual(foreign, .permissionDenied)

        let fresh = try await fixture.identity.startPhoneVerification(
            .init(phone: "010-1234-5678"), options: AccountFixture.inApp("slp"))
        let code = try await fixture.textedCode(to: "+821012345678", after: 1)
        let wrongCode = code == "000000" ? "111111" : "000000"
        let wrong = await statusCode {
            _ = try await fixture.account.deleteAccount(
                .init(proof: .init(proof: .phone(.init(verificationID: fresh.verificationID, code: wrongCode)))),
                options: fixture.options(token))
        }
        XCTAssertEqual(wrong, .permissionDenied)
        _ = try await fixture.account.deleteAccount(
            .init(proof: .init(proof: .phone(.init(verificationID: fresh.verificationID, code: code)))),
            options: fixture.options(token))
        let gone = await statusCode { _ = try await fixture.account.getMe(.init(), options: fixture.options(token)) }
        XCTAssertEqual(gone, .unauthenticated)
        try await fixture.stop()
    }
}
