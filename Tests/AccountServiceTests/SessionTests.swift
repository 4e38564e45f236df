import Foundation
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediCrypto
import YediProto

@testable import AccountService

/// Sign-up, sign-in, tokens, refresh rotation, sign-out and the sign-in throttle, over TLS.
final class SessionTests: XCTestCase {
    func testSignUpThenSignInAsCustomerAndDesigner() async throws {
        let fixture = try await AccountFixture.start()
        let customer = try await fixture.signUp(SampleAccounts.customer("MinJi@Example.com"))
        XCTAssertEqual(customer.user?.email, "minji@example.com", "emails are kept lowercased")
        XCTAssertEqual(customer.user?.role, .customer)
        XCTAssertEqual(customer.user?.phone, "01012345678")
        XCTAssertFalse(customer.session?.accessToken.isEmpty ?? true)
        let designer = try await fixture.signUp(SampleAccounts.designer())
        XCTAssertEqual(designer.user?.role, .designer)

        let signedIn = try await fixture.account.signIn(.init(email: "MINJI@example.com", password: "hair2024!"))
        XCTAssertEqual(signedIn.user?.id, customer.user?.id)
        let session = try XCTUnwrap(signedIn.session)
        XCTAssertEqual(
            session.accessExpiresAtMs, fixture.clock.nowMilliseconds + 15 * 60 * 1_000, "a 15-minute access token")
        let me = try await fixture.account.getMe(.init(), options: fixture.options(session.accessToken))
        XCTAssertEqual(me.name, "김민지")
        XCTAssertEqual(me.birthDate, .init(year: 1995, month: 4, day: 12))

        // The token is a standard JWT the other services verify locally.
        let claims = try await fixture.service.environment.tokenVerifier.claims(of: session.accessToken)
        XCTAssertEqual(claims.userID, customer.user?.id)
        XCTAssertEqual(claims.role, .customer)
        XCTAssertEqual(claims.sessionID?.isEmpty, false)
        try await fixture.stop()
    }

    func testEveryInvalidFieldIsRefusedNamingIt() async throws {
        let fixture = try await AccountFixture.start()
        typealias Change = (inout YediAccount.SignUpRequest) -> Void
        let cases: [(String, Change)] = [
            ("email", { $0.email = "not-an-email" }),
            ("email", { $0.email = "a@b" }),
            ("password", { $0.password = "short1" }),
            ("password", { $0.password = "onlyletters" }),
            ("password", { $0.password = "12345678901" }),
            ("name", { $0.name = "   " }),
            ("name", { $0.name = String(repeating: "가", count: 51) }),
            ("phone", { $0.phone = "02-555-1234" }),
            ("phone", { $0.phone = "010-12-34" }),
            ("gender", { $0.gender = .unspecified }),
            ("birth_date", { $0.birthDate = nil }),
            ("birth_date", { $0.birthDate = .init(year: 1999, month: 2, day: 30) }),
            ("birth_date", { $0.birthDate = .init(year: 2999, month: 1, day: 1) }),
            ("role", { $0.role = .unspecified }),
            ("designer", { $0.designer = SampleAccounts.designer().designer }),
        ]
        for (field, change) in cases {
            var request = SampleAccounts.customer("case-\(field)@example.com")
            change(&request)
            let error = await rpcError { _ = try await fixture.account.signUp(request) }
            XCTAssertEqual(error?.code, .invalidArgument, "\(field): \(request)")
            XCTAssertTrue(error?.message.hasPrefix("\(field):") ?? false, "\(field): \(error?.message ?? "accepted")")
        }
        let designerCases: [(String, Change)] = [
            ("designer", { $0.designer = nil }),
            ("designer.rank", { $0.designer?.rank = .unspecified }),
            ("designer.shop", { $0.designer?.shop = nil }),
            ("designer.shop.name", { $0.designer?.shop?.name = "" }),
            ("designer.shop.phone", { $0.designer?.shop?.phone = "12345" }),
            ("designer.shop.address", { $0.designer?.shop?.address = nil }),
            ("designer.shop.address.city", { $0.designer?.shop?.address?.city = "" }),
            ("designer.shop.latitude", { $0.designer?.shop?.latitude = 91 }),
            ("designer.shop.longitude", { $0.designer?.shop?.longitude = .nan }),
            ("designer.shop.opening_hour", { $0.designer?.shop?.openingHour = 25 }),
            (
                "designer.shop.closing_hour",
                {
                    $0.designer?.shop?.openingHour = 10
                    $0.designer?.shop?.closingHour = 9
                }
            ),
            ("designer.shop.time_zone", { $0.designer?.shop?.timeZone = "Mars/Olympus" }),
            ("designer.shop.messenger_links[0].url", { $0.designer?.shop?.messengerLinks[0].url = "javascript:x" }),
            ("designer.skills[0]", { $0.designer?.skills = [""] }),
        ]
        for (field, change) in designerCases {
            var request = SampleAccounts.designer("designer-\(field)@example.com")
            change(&request)
            let error = await rpcError { _ = try await fixture.account.signUp(request) }
            XCTAssertEqual(error?.code, .invalidArgument, field)
            XCTAssertTrue(error?.message.hasPrefix("\(field):") ?? false, "\(field): \(error?.message ?? "accepted")")
        }
        // Defaults: hours 9–21 when none are given, Asia/Seoul.
        let designer = try await fixture.signUp(SampleAccounts.designer("defaults@example.com"))
        let profile = try await fixture.account.getDesigner(.init(designerID: designer.user!.id))
        XCTAssertEqual(profile.shop?.openingHour, 9)
        XCTAssertEqual(profile.shop?.closingHour, 21)
        XCTAssertEqual(profile.shop?.timeZone, "Asia/Seoul")
        try await fixture.stop()
    }

    func testWrongPasswordAndUnknownEmailGetTheSameAnswer() async throws {
        let fixture = try await AccountFixture.start()
        _ = try await fixture.signUp(SampleAccounts.customer())
        let wrongPassword = await rpcError {
            _ = try await fixture.account.signIn(.init(email: "minji@example.com", password: "wrong-pass1"))
        }
        let unknownEmail = await rpcError {
            _ = try await fixture.account.signIn(.init(email: "nobody@example.com", password: "hair2024!"))
        }
        XCTAssertEqual(wrongPassword?.code, .unauthenticated)
        XCTAssertEqual(wrongPassword?.code, unknownEmail?.code)
        XCTAssertEqual(wrongPassword?.message, unknownEmail?.message)
        try await fixture.stop()
    }

    func testRepeatedFailuresAreThrottledAndTheThrottleSurvivesARestart() async throws {
        let harness = try ServiceHarness()
        let data = harness.dataRoot.appendingPathComponent("throttle").path
        let clock = ManualClock()
        var fixture = try await AccountFixture.start(clock: clock, harness: harness, dataDirectory: data)
        _ = try await fixture.signUp(SampleAccounts.customer())
        for _ in 0..<5 {
            let code = await statusCode {
                _ = try await fixture.account.signIn(.init(email: "minji@example.com", password: "guess12345"))
            }
            XCTAssertEqual(code, .unauthenticated)
        }
        let locked = await rpcError {
            _ = try await fixture.account.signIn(.init(email: "minji@example.com", password: "hair2024!"))
        }
        XCTAssertEqual(locked?.code, .resourceExhausted, "even the right password waits out the lock")
        XCTAssertEqual(locked?.metadata["retry-after"], "900")

        try await fixture.stop()
        fixture = try await AccountFixture.start(clock: clock, harness: harness, dataDirectory: data)
        let afterRestart = await statusCode {
            _ = try await fixture.account.signIn(.init(email: "minji@example.com", password: "hair2024!"))
        }
        XCTAssertEqual(afterRestart, .resourceExhausted, "the throttle survives a restart")
        clock.advance(by: 15 * 60 + 1)
        let later = try await fixture.account.signIn(.init(email: "minji@example.com", password: "hair2024!"))
        XCTAssertNotNil(later.session)
        try await fixture.stop()
    }

    func testExpiredAndTamperedTokensAreRefused() async throws {
        let fixture = try await AccountFixture.start()
        let signedUp = try await fixture.signUp(SampleAccounts.customer())
        let token = try XCTUnwrap(signedUp.session?.accessToken)
        var parts = token.split(separator: ".").map(String.init)
        let claims = String(decoding: Base64URL.decode(parts[1]) ?? [], as: UTF8.self)
            .replacingOccurrences(of: "customer", with: "designer")
        parts[1] = Base64URL.encode(Array(claims.utf8))
        let tampered = await rpcError {
            _ = try await fixture.account.getMe(.init(), options: fixture.options(parts.joined(separator: ".")))
        }
        XCTAssertEqual(tampered?.code, .unauthenticated)
        fixture.clock.advance(by: 15 * 60 + 31)  // past the expiry and the 30 s skew allowance
        let expired = await rpcError { _ = try await fixture.account.getMe(.init(), options: fixture.options(token)) }
        XCTAssertEqual(expired?.code, .unauthenticated)
        XCTAssertTrue(expired?.message.contains("expired") ?? false, expired?.message ?? "")
        try await fixture.stop()
    }

    func testRefreshRotatesAndAReusedTokenEndsTheWholeFamily() async throws {
        let fixture = try await AccountFixture.start()
        let first = try await fixture.signUp(SampleAccounts.customer())
        let token1 = try XCTUnwrap(first.session?.refreshToken)
        let second = try await fixture.account.refreshSession(.init(refreshToken: token1))
        let token2 = try XCTUnwrap(second.session?.refreshToken)
        XCTAssertNotEqual(token1, token2, "the refresh token rotates")
        let me = try await fixture.account.getMe(.init(), options: fixture.options(second.session!.accessToken))
        XCTAssertEqual(me.id, first.user?.id)

        // token1 again: stolen. The family ends, so token2 stops working too.
        let reuse = await rpcError { _ = try await fixture.account.refreshSession(.init(refreshToken: token1)) }
        XCTAssertEqual(reuse?.code, .unauthenticated)
        XCTAssertTrue(reuse?.message.contains("already used") ?? false, reuse?.message ?? "")
        let afterReuse = await statusCode { _ = try await fixture.account.refreshSession(.init(refreshToken: token2)) }
        XCTAssertEqual(afterReuse, .unauthenticated)

        // Another session of the same user is another family: untouched.
        let other = try await fixture.account.signIn(.init(email: "minji@example.com", password: "hair2024!"))
        let otherRefresh = try await fixture.account.refreshSession(.init(refreshToken: other.session!.refreshToken))
        XCTAssertNotNil(otherRefresh.session)

        // Sign-out ends a family; it answers OK for unknown tokens too (it reveals nothing).
        _ = try await fixture.account.signOut(.init(refreshToken: otherRefresh.session!.refreshToken))
        let afterSignOut = await statusCode {
            _ = try await fixture.account.refreshSession(.init(refreshToken: otherRefresh.session!.refreshToken))
        }
        XCTAssertEqual(afterSignOut, .unauthenticated)
        _ = try await fixture.account.signOut(.init(refreshToken: "nonsense"))

        // Expiry: 30 days.
        let third = try await fixture.account.signIn(.init(email: "minji@example.com", password: "hair2024!"))
        fixture.clock.advance(by: 30 * 24 * 3_600 + 1)
        let expired = await rpcError {
            _ = try await fixture.account.refreshSession(.init(refreshToken: third.session!.refreshToken))
        }
        XCTAssertEqual(expired?.code, .unauthenticated)
        XCTAssertTrue(expired?.message.contains("expired") ?? false, expired?.message ?? "")
        try await fixture.stop()
    }
}
