import Foundation
import GRDB
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// YeDi's password reset by a mailed code, and a change with the current password: both answer nothing
/// about who has an account, end every other session and revoke the old access tokens.
final class PasswordResetTests: XCTestCase {
    private var fixture: AccountFixture!
    private let email = "minji@example.com"
    private let oldPassword = SampleAccounts.customer().password

    override func setUp() async throws {
        fixture = try await AccountFixture.start()
    }

    override func tearDown() async throws {
        try await fixture?.stop()
        fixture = nil
    }

    private func mails(to address: String, template: String) throws -> [SentMessage] {
        try fixture.sentMail().filter { $0.to == address && $0.template == template }
    }

    /// The code mailed for reset `id`, once the outbox has sent it.
    private func code(for id: String) async throws -> String {
        var found: SentMessage?
        _ = try await eventually(timeout: 20) {
            found = try self.fixture.sentMail().last { $0.values["reset_id"] == id }
            return found != nil
        }
        return try XCTUnwrap(found?.values["code"], "no reset mail for \(id)")
    }

    func testAResetMailsACodeOnlyToAnAccountAndAnswersAlike() async throws {
        _ = try await fixture.signUp(SampleAccounts.customer(email))
        let known = try await fixture.account.requestPasswordReset(.init(email: "MinJi@Example.com"))
        let unknown = try await fixture.account.requestPasswordReset(.init(email: "nobody@example.com"))
        XCTAssertEqual(known.codeExpiresAtMs, unknown.codeExpiresAtMs, "the same shape of answer")
        XCTAssertEqual(known.codeExpiresAtMs, fixture.clock.nowMilliseconds + 15 * 60 * 1_000)
        XCTAssertNotEqual(known.resetID, unknown.resetID)
        let code = try await code(for: known.resetID)
        XCTAssertEqual(code.count, 6)
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertEqual(
            try fixture.sentMail().filter { $0.to == "nobody@example.com" }.count, 0, "no mail to a stranger")
        let rows = try await fixture.service.environment.database.read { db in
            try Row.fetchAll(db, sql: "SELECT user_id, code_hash FROM password_reset").map {
                (user: $0["user_id"] as String?, codeHash: ($0["code_hash"] as Data?) ?? Data())
            }
        }
        XCTAssertEqual(rows.count, 2, "a row either way: both answers cost the same")
        XCTAssertEqual(rows.filter { $0.user == nil }.count, 1)
        for row in rows {
            XCTAssertNil(row.codeHash.range(of: Data(code.utf8)), "codes are hashed")
        }
        let guessed = await rpcError {
            _ = try await self.fixture.account.resetPassword(
                .init(resetID: unknown.resetID, code: code, newPassword: "newHair2025!"))
        }
        XCTAssertEqual(guessed?.code, .unauthenticated, "a reset for an address without an account resets nothing")
        let malformed = await rpcError {
            _ = try await self.fixture.account.requestPasswordReset(.init(email: "not an address"))
        }
        XCTAssertEqual(malformed?.code, .invalidArgument)
        XCTAssertTrue(malformed?.message.contains("email") == true, malformed?.message ?? "")
    }

    func testResetSetsTheNewPasswordAndEndsEveryOtherSession() async throws {
        let before = try await fixture.signUp(SampleAccounts.customer(email))
        let oldSession = try XCTUnwrap(before.session)
        let reset = try await fixture.account.requestPasswordReset(.init(email: email))
        let code = try await code(for: reset.resetID)
        let weak = await rpcError {
            _ = try await self.fixture.account.resetPassword(
                .init(resetID: reset.resetID, code: code, newPassword: "short"))
        }
        XCTAssertEqual(weak?.code, .invalidArgument)
        XCTAssertTrue(weak?.message.hasPrefix("new_password") == true, weak?.message ?? "")
        fixture.clock.advance(by: 2)  // the old token was issued in an earlier second

        let done = try await fixture.account.resetPassword(
            .init(resetID: reset.resetID, code: code, newPassword: "newHair2025!"))
        XCTAssertEqual(done.user?.id, before.user?.id)
        let newSession = try XCTUnwrap(done.session)
        let me = try await fixture.account.getMe(.init(), options: fixture.options(newSession.accessToken))
        XCTAssertEqual(me.id, before.user?.id, "the new session works at once")

        let oldAccess = await statusCode {
            _ = try await self.fixture.account.getMe(.init(), options: self.fixture.options(oldSession.accessToken))
        }
        XCTAssertEqual(oldAccess, .unauthenticated, "the old access token is revoked")
        let oldRefresh = await statusCode {
            _ = try await self.fixture.account.refreshSession(.init(refreshToken: oldSession.refreshToken))
        }
        XCTAssertEqual(oldRefresh, .unauthenticated, "the old session has ended")
        let oldPassword = await statusCode {
            _ = try await self.fixture.account.signIn(.init(email: self.email, password: self.oldPassword))
        }
        XCTAssertEqual(oldPassword, .unauthenticated)
        let signedIn = try await fixture.account.signIn(.init(email: email, password: "newHair2025!"))
        XCTAssertEqual(signedIn.user?.id, before.user?.id)

        let again = await statusCode {
            _ = try await self.fixture.account.resetPassword(
                .init(resetID: reset.resetID, code: code, newPassword: "otherHair2026!"))
        }
        XCTAssertEqual(again, .unauthenticated, "a code resets once")
        let notified = try await eventually(timeout: 20) {
            try !self.mails(to: self.email, template: "password-changed").isEmpty
        }
        XCTAssertTrue(notified, "the owner is told the password changed")
    }

    func testWrongCodesAndExpiryEndAReset() async throws {
        _ = try await fixture.signUp(SampleAccounts.customer(email))
        let reset = try await fixture.account.requestPasswordReset(.init(email: email))
        let code = try await self.code(for: reset.resetID)
        let wrong = code == "000000" ? "111111" : "000000"
        for _ in 0..<5 {
            let refused = await statusCode {
                _ = try await self.fixture.account.resetPassword(
                    .init(resetID: reset.resetID, code: wrong, newPassword: "newHair2025!"))
            }
            XCTAssertEqual(refused, .unauthenticated)
        }
        let spent = await statusCode {
            _ = try await self.fixture.account.resetPassword(
                .init(resetID: reset.resetID, code: code, newPassword: "newHair2025!"))
        }
        XCTAssertEqual(spent, .unauthenticated, "5 wrong codes end the reset")

        let second = try await fixture.account.requestPasswordReset(.init(email: email))
        let secondCode = try await self.code(for: second.resetID)
        fixture.clock.advance(by: 15 * 60)
        let expired = await statusCode {
            _ = try await self.fixture.account.resetPassword(
                .init(resetID: second.resetID, code: secondCode, newPassword: "newHair2025!"))
        }
        XCTAssertEqual(expired, .unauthenticated, "a code lasts 15 minutes")
        let unchanged = try await fixture.account.signIn(.init(email: email, password: oldPassword))
        XCTAssertNotNil(unchanged.session, "the password is the old one still")
    }

    /// Reset mails share SignUp's 5 mails per address per hour: nobody floods a mailbox with either.
    func testResetMailsShareTheAddressMailLimit() async throws {
        _ = try await fixture.signUp(SampleAccounts.customer(email))  // one mail (the sign-up code)
        for _ in 0..<6 { _ = try await fixture.account.requestPasswordReset(.init(email: email)) }
        let arrived = try await eventually(timeout: 20) {
            try self.mails(to: self.email, template: "password-reset-code").count >= 4
        }
        XCTAssertTrue(arrived)
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertEqual(try mails(to: email, template: "password-reset-code").count, 4, "5 mails an hour in all")
    }

    func testChangePasswordNeedsTheCurrentOneAndEndsOtherSessions() async throws {
        let signedUp = try await fixture.signUp(SampleAccounts.customer(email))
        let session = try XCTUnwrap(signedUp.session)
        let other = try await fixture.account.signIn(.init(email: email, password: oldPassword))
        fixture.clock.advance(by: 2)
        let wrong = await rpcError {
            _ = try await self.fixture.account.changePassword(
                .init(currentPassword: "guess1234", newPassword: "newHair2025!"),
                options: self.fixture.options(session.accessToken))
        }
        XCTAssertEqual(wrong?.code, .permissionDenied)
        XCTAssertTrue(wrong?.message.hasPrefix("current_password") == true, wrong?.message ?? "")
        let anonymous = await statusCode {
            _ = try await self.fixture.account.changePassword(
                .init(currentPassword: self.oldPassword, newPassword: "newHair2025!"))
        }
        XCTAssertEqual(anonymous, .unauthenticated)

        let changed = try await fixture.account.changePassword(
            .init(currentPassword: oldPassword, newPassword: "newHair2025!"),
            options: fixture.options(session.accessToken))
        let fresh = try XCTUnwrap(changed.session)
        _ = try await fixture.account.getMe(.init(), options: fixture.options(fresh.accessToken))
        for stale in [session, try XCTUnwrap(other.session)] {
            let access = await statusCode {
                _ = try await self.fixture.account.getMe(.init(), options: self.fixture.options(stale.accessToken))
            }
            XCTAssertEqual(access, .unauthenticated)
            let refresh = await statusCode {
                _ = try await self.fixture.account.refreshSession(.init(refreshToken: stale.refreshToken))
            }
            XCTAssertEqual(refresh, .unauthenticated)
        }
        let signedIn = try await fixture.account.signIn(.init(email: email, password: "newHair2025!"))
        XCTAssertEqual(signedIn.user?.id, signedUp.user?.id)
    }
}
