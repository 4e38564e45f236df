import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import XCTest
import YediProto

@testable import AccountService

/// What Housetainer's member tests share: an AccountService over TLS serving the repository's app files in
/// development mode (provider assertions `dev:<provider>:<subject>:<email>`), a new one per test, its
/// `Members` client, and the walk from sign-in to membership.
class HousetainerTestCase: XCTestCase {
    var fixture: AccountFixture!

    override func setUp() async throws {
        fixture = try await AccountFixture.startServingApps()
    }

    override func tearDown() async throws {
        try await fixture?.stop()
    }

    var members: YediHousetainer.Members.Client { YediHousetainer.Members.Client(fixture.client) }
    static let anonymous = AccountFixture.inApp("housetainer")
    static let terms: [YediHousetainer.AcceptedTerm] = [
        .init(kind: "terms", version: "2024-01"), .init(kind: "privacy", version: "2024-01"),
        .init(kind: "eula", version: "1.0"),
    ]

    /// A first member made behind the RPCs (every community starts with someone nobody invited).
    func founder(_ id: String, nickname: String) async throws -> CallOptions {
        try await fixture.member(id, app: "housetainer", nickname: nickname)
    }

    /// Signs in with Google's development assertion for `email`.
    func signIn(_ subject: String, email: String) async throws -> YediHousetainer.SignInResponse {
        try await members.signIn(
            .init(assertion: .init(provider: "google", token: "dev:google:\(subject):\(email)")),
            options: Self.anonymous)
    }

    /// The ticket of someone without an account.
    func ticket(_ subject: String, email: String) async throws -> String {
        let answer = try await signIn(subject, email: email)
        XCTAssertEqual(answer.outcome, .unregistered)
        return answer.ticket
    }

    /// `inviter` invites `email`; the code.
    func invite(_ email: String, by inviter: CallOptions, name: String = "손님") async throws -> String {
        try await members.createInvitation(.init(inviteeEmail: email, inviteeName: name), options: inviter).code
    }

    /// Invited by `inviter`, signed in and signed up: the new member's id and token.
    func join(_ subject: String, nickname: String, invitedBy inviter: CallOptions) async throws
        -> (id: String, options: CallOptions)
    {
        let email = "\(subject)@example.kr"
        let code = try await invite(email, by: inviter)
        let ticket = try await ticket(subject, email: email)
        let joined = try await members.signUp(
            .init(ticket: ticket, code: code, nickname: nickname, acceptedTerms: Self.terms), options: Self.anonymous)
        return (joined.memberID, fixture.options(try XCTUnwrap(joined.session?.accessToken)))
    }

    /// The status code and message of a call (`.ok` and "" when it succeeded).
    func status(_ call: () async throws -> some Any) async -> (StatusCode, String) {
        do {
            _ = try await call()
            return (.ok, "")
        } catch let error as RPCError {
            return (error.code, error.message)
        } catch {
            return (.unknown, "\(error)")
        }
    }

    func assertRefused(
        _ code: StatusCode, field: String, file: StaticString = #filePath, line: UInt = #line,
        _ call: () async throws -> some Any
    ) async {
        let (got, message) = await status(call)
        XCTAssertEqual(got, code, message, file: file, line: line)
        XCTAssertTrue(message.hasPrefix(field), "\"\(message)\" names \(field)", file: file, line: line)
    }
}
