import Foundation
import GRDB
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Sign-up in two steps (SignUp, then CompleteSignUp with the mailed code), so that SignUp cannot tell
/// anyone whether an address has an account.
final class SignUpTests: XCTestCase {
    private var fixture: AccountFixture!

    override func setUp() async throws {
        fixture = try await AccountFixture.start()
    }

    override func tearDown() async throws {
        try await fixture?.stop()
        fixture = nil
    }

    /// The mail the development sender wrote for sign-up `id`, once the outbox has sent it.
    private func mail(for id: String) async throws -> SentMessage {
        var found: SentMessage?
        _ = try await eventually(timeout: 20) {
            found = try self.fixture.sentMail().last { $0.values["verification_id"] == id }
            return found != nil
        }
        return try XCTUnwrap(found, "no mail for sign-up \(id)")
    }

    private func code(for id: String) async throws -> String {
        let mail = try await mail(for: id)
        return try XCTUnwrap(mail.values["code"])
    }

    private func mails(to address: String) throws -> [SentMessage] {
        try fixture.sentMail().filter { $0.to == address }
    }

    func testATakenEmailGetsTheSameAnswerAndItsOwnerANotice() async throws {
        _ = try await fixture.signUp(SampleAccounts.customer("dup@example.com"))
        let fresh = try await fixture.account.signUp(SampleAccounts.customer("new@example.com"))
        let taken = try await fixture.account.signUp(SampleAccounts.designer("DUP@Example.COM"))

        XCTAssertFalse(taken.verificationID.isEmpty)
        XCTAssertNotEqual(taken.verificationID, fresh.verificationID)
        XCTAssertEqual(taken.codeExpiresAtMs, fresh.codeExpiresAtMs, "the same shape of answer")
        XCTAssertEqual(fresh.codeExpiresAtMs, fixture.clock.nowMilliseconds + 15 * 60 * 1_000)

        let mails = try await waitForMail(to: "dup@example.com", count: 2)
        XCTAssertEqual(Set(mails.map(\.template)), ["sign-up-code", "sign-up-existing-account"])
        let notice = try XCTUnwrap(mails.first { $0.template == "sign-up-existing-account" })
        XCTAssertNil(notice.values["code"], "a notice carries no code")
        XCTAssertTrue(notice.text.contains("이미 있습니다"), notice.text)
        let guessed = await rpcError {
            _ = try await self.fixture.account.completeSignUp(
                .init(verificationID: taken.verificationID, code: "123456"))
        }
        XCTAssertEqual(guessed?.code, .unauthenticated, "the answer to a taken address completes nothing")
        let users = try await fixture.service.environment.database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM user")
        }
        XCTAssertEqual(users, 1, "only the first sign-up made an account")
    }

    func testNothingExistsUntilTheMailedCodeCompletesTheSignUp() async throws {
        let request = SampleAccounts.customer()
        let started = try await fixture.account.signUp(request)
        let mail = try await mail(for: started.verificationID)
        XCTAssertEqual(mail.to, "minji@example.com")
        let code = try XCTUnwrap(mail.values["code"])
        XCTAssertEqual(code.count, 6)
        XCTAssertTrue(mail.text.contains(code))

        let early = await statusCode {
            _ = try await self.fixture.account.signIn(.init(email: request.email, password: request.password))
        }
        XCTAssertEqual(early, .unauthenticated, "no account before the code")
        let (keptRequest, codeHash) = try await fixture.service.environment.database.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT request, code_hash FROM pending_sign_up")
            return ((row?["request"] as Data?) ?? Data(), (row?["code_hash"] as Data?) ?? Data())
        }
        let kept = try YediAccount.SignUpRequest(serializedBytes: [UInt8](keptRequest))
        XCTAssertEqual(kept.password, "", "the pending sign-up keeps the hash, not the password")
        XCTAssertEqual(kept.name, request.name)
        XCTAssertEqual(codeHash.count, 32)
        XCTAssertNil(codeHash.range(of: Data(code.utf8)), "the code is hashed")

        let completed = try await fixture.account.completeSignUp(
            .init(verificationID: started.verificationID, code: code))
        XCTAssertEqual(completed.user?.email, "minji@example.com")
        let me = try await fixture.account.getMe(.init(), options: fixture.options(completed.session!.accessToken))
        XCTAssertEqual(me.id, completed.user?.id)
        let signedIn = try await fixture.account.signIn(.init(email: request.email, password: request.password))
        XCTAssertEqual(signedIn.user?.id, completed.user?.id)

        let again = await rpcError {
            _ = try await self.fixture.account.completeSignUp(.init(verificationID: started.verificationID, code: code))
        }
        XCTAssertEqual(again?.code, .unauthenticated, "a code completes one sign-up once")
    }

    func testFiveWrongCodesEndTheSignUp() async throws {
        let started = try await fixture.account.signUp(SampleAccounts.customer())
        let code = try await code(for: started.verificationID)
        let wrong = String(code.map { $0 == "9" ? "0" : Character(String(Int(String($0))! + 1)) })
        for attempt in 0..<5 {
            let error = await rpcError {
                _ = try await self.fixture.account.completeSignUp(
                    .init(verificationID: started.verificationID, code: wrong))
            }
            XCTAssertEqual(error?.code, .unauthenticated, "attempt \(attempt)")
            XCTAssertTrue(error?.message.hasPrefix("code:") ?? false, error?.message ?? "")
        }
        let right = await statusCode {
            _ = try await self.fixture.account.completeSignUp(.init(verificationID: started.verificationID, code: code))
        }
        XCTAssertEqual(right, .unauthenticated, "after 5 wrong codes even the right one is refused")
        for malformed in ["12345", "1234567", "12a456", ""] {
            let error = await statusCode {
                _ = try await self.fixture.account.completeSignUp(
                    .init(verificationID: started.verificationID, code: malformed))
            }
            XCTAssertEqual(error, .unauthenticated, malformed)
        }
    }

    func testACodeExpiresAfterFifteenMinutes() async throws {
        let started = try await fixture.account.signUp(SampleAccounts.customer())
        let code = try await code(for: started.verificationID)
        fixture.clock.advance(by: 15 * 60)
        let late = await statusCode {
            _ = try await self.fixture.account.completeSignUp(.init(verificationID: started.verificationID, code: code))
        }
        XCTAssertEqual(late, .unauthenticated)
    }

    /// A stranger's SignUp for my address is a sign-up of its own: it neither replaces mine nor can it
    /// be completed with my code, and once mine completes, theirs is refused.
    func testAStrangersSignUpForMyAddressCannotTakeMine() async throws {
        let mine = try await fixture.account.signUp(SampleAccounts.customer("minji@example.com", password: "hair2024!"))
        var strangers = SampleAccounts.customer("minji@example.com", password: "stolen2024!")
        strangers.name = "낯선 사람"
        let theirs = try await fixture.account.signUp(strangers)
        let myCode = try await code(for: mine.verificationID)
        let theirCode = try await code(for: theirs.verificationID)

        let crossed = await statusCode {
            _ = try await self.fixture.account.completeSignUp(
                .init(verificationID: theirs.verificationID, code: myCode))
        }
        XCTAssertEqual(crossed, myCode == theirCode ? .ok : .unauthenticated)
        guard myCode != theirCode else { return }  // one chance in a million: nothing more to learn here
        let completed = try await fixture.account.completeSignUp(
            .init(verificationID: mine.verificationID, code: myCode))
        XCTAssertEqual(completed.user?.name, "김민지")
        let late = await statusCode {
            _ = try await self.fixture.account.completeSignUp(
                .init(verificationID: theirs.verificationID, code: theirCode))
        }
        XCTAssertEqual(late, .unauthenticated, "the address has an account now")
        let stranger = await statusCode {
            _ = try await self.fixture.account.signIn(.init(email: "minji@example.com", password: "stolen2024!"))
        }
        XCTAssertEqual(stranger, .unauthenticated)
    }

    /// SignUp cannot flood a mailbox: past 5 mails an hour to one address it answers alike and sends
    /// nothing; an hour later it mails again.
    func testAnAddressGetsAtMostFiveSignUpMailsAnHour() async throws {
        var answers: [YediAccount.SignUpResponse] = []
        for _ in 0..<7 {
            answers.append(try await fixture.account.signUp(SampleAccounts.customer("flooded@example.com")))
        }
        XCTAssertEqual(Set(answers.map(\.codeExpiresAtMs)).count, 1, "every answer alike")
        _ = try await waitForMail(to: "flooded@example.com", count: 5)
        try await Task.sleep(for: .milliseconds(300))
        let sent = try mails(to: "flooded@example.com")
        XCTAssertEqual(sent.count, 5)
        let heldBack = await statusCode {
            _ = try await self.fixture.account.completeSignUp(
                .init(verificationID: answers[6].verificationID, code: "000000"))
        }
        XCTAssertEqual(heldBack, .unauthenticated)

        fixture.clock.advance(by: 3_600)
        let later = try await fixture.account.signUp(SampleAccounts.customer("flooded@example.com"))
        _ = try await mail(for: later.verificationID)
    }

    private func waitForMail(to address: String, count: Int) async throws -> [SentMessage] {
        let arrived = try await eventually(timeout: 20) { try self.mails(to: address).count >= count }
        let mails = try mails(to: address)
        XCTAssertTrue(arrived, "\(count) mails to \(address): \(mails)")
        return mails
    }
}
