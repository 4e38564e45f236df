import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Phone verification (docs/platform.md, "Verified identities"): a 6-digit code by SMS through the
/// outbox, 5 minutes, 5 tries, once; limits per number and per address; then a ticket or a session.
final class PhoneVerificationTests: XCTestCase {
    static let phone = "010-1234-5678"
    static let number = "+821012345678"

    func testPhoneVerificationTextsACodeThatSignsUpWithATicketAndThenSignsIn() async throws {
        let fixture = try await AccountFixture.startServingApps()
        let first = try await fixture.verifyPhone(Self.phone, number: Self.number)
        guard case .signUp(let ticket)? = first.outcome else { return XCTFail("no ticket for a new number: \(first)") }
        XCTAssertEqual(ticket.identity, "phone:+821012345678")
        XCTAssertEqual(ticket.expiresAtMs, fixture.clock.nowMilliseconds + 15 * 60 * 1_000, "SLP's file: 15 minutes")
        let sms = try DevelopmentFileSender.messages(
            in: fixture.service.environment.dataDirectory.appendingPathComponent("sent-sms"))
        XCTAssertEqual(sms.map(\.to), [Self.number])
        XCTAssertTrue(sms[0].text.hasPrefix("[SLP] 인증번호 "), sms[0].text)

        let created = try await fixture.identity.completeIdentitySignUp(
            .init(ticket: ticket.ticket, nickname: "새싹이"), options: AccountFixture.inApp("slp"))
        let user = try XCTUnwrap(created.user)
        XCTAssertEqual(user.phone, "01012345678")
        XCTAssertEqual(user.email, "")
        let claims = try await fixture.service.environment.tokenVerifier.claims(
            of: try XCTUnwrap(created.session?.accessToken))
        XCTAssertEqual(claims.app, "slp")
        XCTAssertEqual(claims.role, "member")
        let reused = await statusCode {
            _ = try await fixture.identity.completeIdentitySignUp(
                .init(ticket: ticket.ticket, nickname: "다른이름"), options: AccountFixture.inApp("slp"))
        }
        XCTAssertEqual(reused, .unauthenticated, "a ticket creates one account")

        fixture.clock.advance(by: 31)
        let again = try await fixture.verifyPhone(Self.phone, number: Self.number, after: 1)
        guard case .signedIn(let session)? = again.outcome else { return XCTFail("no session for a known number") }
        XCTAssertEqual(session.user?.id, user.id)
        try await fixture.stop()
    }

    func testPhoneVerificationAnswersTheSameForANumberWithAndWithoutAnAccount() async throws {
        let fixture = try await AccountFixture.startServingApps()
        guard case .signUp(let ticket)? = try await fixture.verifyPhone(Self.phone, number: Self.number).outcome
        else { return XCTFail("no ticket") }
        _ = try await fixture.identity.completeIdentitySignUp(
            .init(ticket: ticket.ticket, nickname: "있음"), options: AccountFixture.inApp("slp"))
        fixture.clock.advance(by: 31)
        let known = try await fixture.identity.startPhoneVerification(
            .init(phone: Self.phone), options: AccountFixture.inApp("slp"))
        let unknown = try await fixture.identity.startPhoneVerification(
            .init(phone: "010-9999-0000"), options: AccountFixture.inApp("slp"))
        XCTAssertEqual(known.codeExpiresAtMs, unknown.codeExpiresAtMs)
        XCTAssertFalse(known.verificationID.isEmpty || unknown.verificationID.isEmpty)
        _ = try await fixture.textedCode(to: "+821099990000")
        try await fixture.stop()
    }

    func testPhoneVerificationFiveWrongCodesLockTheVerification() async throws {
        let fixture = try await AccountFixture.startServingApps()
        let started = try await fixture.identity.startPhoneVerification(
            .init(phone: Self.phone), options: AccountFixture.inApp("slp"))
        let code = try await fixture.textedCode(to: Self.number)
        let wrong = code == "000000" ? "111111" : "000000"
        for attempt in 1...5 {
            let status = await statusCode {
                _ = try await fixture.identity.verifyPhone(
                    .init(code: .init(verificationID: started.verificationID, code: wrong)),
                    options: AccountFixture.inApp("slp"))
            }
            XCTAssertEqual(status, .unauthenticated, "wrong code \(attempt)")
        }
        let right = await statusCode {
            _ = try await fixture.identity.verifyPhone(
                .init(code: .init(verificationID: started.verificationID, code: code)),
                options: AccountFixture.inApp("slp"))
        }
        XCTAssertEqual(right, .unauthenticated, "after 5 wrong codes even the right one is refused")
        try await fixture.stop()
    }

    func testPhoneVerificationCodeExpiresAfterFiveMinutesOfTheInjectedClock() async throws {
        let fixture = try await AccountFixture.startServingApps()
        let started = try await fixture.identity.startPhoneVerification(
            .init(phone: Self.phone), options: AccountFixture.inApp("slp"))
        XCTAssertEqual(started.codeExpiresAtMs, fixture.clock.nowMilliseconds + 5 * 60 * 1_000)
        let code = try await fixture.textedCode(to: Self.number)
        fixture.clock.advance(by: 300)
        let late = await statusCode {
            _ = try await fixture.identity.verifyPhone(
                .init(code: .init(verificationID: started.verificationID, code: code)),
                options: AccountFixture.inApp("slp"))
        }
        XCTAssertEqual(late, .unauthenticated)

        let second = try await fixture.identity.startPhoneVerification(
            .init(phone: Self.phone), options: AccountFixture.inApp("slp"))
        let secondCode = try await fixture.textedCode(to: Self.number, after: 1)
        fixture.clock.advance(by: 299)
        let inTime = try await fixture.identity.verifyPhone(
            .init(code: .init(verificationID: second.verificationID, code: secondCode)),
            options: AccountFixture.inApp("slp"))
        XCTAssertNotNil(inTime.outcome, "a code works until its fifth minute ends")
        try await fixture.stop()
    }

    func testPhoneVerificationIsLimitedPerNumberWithACooldownAndAnHourlyCap() async throws {
        let fixture = try await AccountFixture.startServingApps()
        let start = {
            try await fixture.identity.startPhoneVerification(
                .init(phone: Self.phone), options: AccountFixture.inApp("slp"))
        }
        _ = try await start()
        let resend = await rpcError { _ = try await start() }
        XCTAssertEqual(resend?.code, .resourceExhausted, "a resend within 4 s")
        XCTAssertEqual(resend?.metadata["retry-after"], "4")
        for _ in 2...5 {
            fixture.clock.advance(by: 5)
            _ = try await start()
        }
        fixture.clock.advance(by: 5)
        let sixth = await statusCode { _ = try await start() }
        XCTAssertEqual(sixth, .resourceExhausted, "a sixth code within the hour")
        let otherNumber = await statusCode {
            _ = try await fixture.identity.startPhoneVerification(
                .init(phone: "010-2222-3333"), options: AccountFixture.inApp("slp"))
        }
        XCTAssertEqual(otherNumber, .resourceExhausted, "this address had its five codes this hour")
        try await fixture.stop()
    }

    func testPhoneVerificationIsLimitedPerClientAddress() async throws {
        let fixture = try await AccountFixture.startServingApps { options in
            options.signInRatePerAddress = "3/60"
        }
        var statuses: [StatusCode] = []
        for number in ["010-1000-0001", "010-1000-0002", "010-1000-0003", "010-1000-0004"] {
            statuses.append(
                await statusCode {
                    _ = try await fixture.identity.startPhoneVerification(
                        .init(phone: number), options: AccountFixture.inApp("slp"))
                })
        }
        XCTAssertEqual(statuses, [.ok, .ok, .ok, .resourceExhausted])
        try await fixture.stop()
    }

    func testPhoneVerificationRefusesABadNumberAndAnAppThatDoesNotSignInByPhone() async throws {
        let fixture = try await AccountFixture.startServingApps()
        let bad = await statusCode {
            _ = try await fixture.identity.startPhoneVerification(
                .init(phone: "02-555-1234"), options: AccountFixture.inApp("slp"))
        }
        XCTAssertEqual(bad, .invalidArgument)
        // Housetainer signs in with providers only: the method's apps refuse it before the handler.
        let housetainer = await statusCode {
            _ = try await fixture.identity.startPhoneVerification(
                .init(phone: Self.phone), options: AccountFixture.inApp("housetainer"))
        }
        XCTAssertEqual(housetainer, .permissionDenied)
        try await fixture.stop()
    }
}
