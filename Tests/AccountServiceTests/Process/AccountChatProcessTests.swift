import AccessTokens
import Foundation
import RPCCore
import RPCTestSupport
import ServiceTestSupport
import XCTest
import YediCrypto
import YediProto

/// The real AccountService and ChatService executables, separate processes on the test PKI over TLS: an
/// access token AccountService issues at sign-in is accepted by ChatService, which verifies it locally
/// with the public key; no token, a tampered token or a token from another key are refused.
final class AccountChatProcessTests: XCTestCase {
    func testATokenFromSignInIsAcceptedByChatServiceAndATamperedOneIsNot() async throws {
        let harness = try ServiceHarness()
        // Peers on ports nothing listens on: nothing here may reach a development system by accident.
        let nowhere = try ServiceHarness.unusedPort()
        let account = try await ServiceProcess.start(
            "AccountService", harness: harness, dataDirectory: harness.dataRoot.appendingPathComponent("account").path,
            peers: ["content": nowhere, "booking": nowhere, "chat": nowhere])
        let chat = try await ServiceProcess.start(
            "ChatService", harness: harness, dataDirectory: harness.dataRoot.appendingPathComponent("chat").path,
            peers: ["account": account.port, "content": nowhere, "booking": nowhere])
        defer {
            account.stop()
            chat.stop()
        }

        // Sign up with no client certificate (an app), sign in presenting the probe's certificate.
        let request = SampleAccounts.customer("process-tls@example.com")
        let signedUp = try await withRPCClient(configuration: account.clientConfiguration()) { client in
            try await YediAccount.AccountService.Client(client).signUpCompletely(
                request, accountData: harness.dataRoot.appendingPathComponent("account"),
                options: CallOptions(timeout: .seconds(10)))
        }
        let signedIn = try await withRPCClient(configuration: account.clientConfiguration(identity: "yedi-probe")) {
            client in
            try await YediAccount.AccountService.Client(client).signIn(
                .init(email: request.email, password: request.password), options: CallOptions(timeout: .seconds(10)))
        }
        XCTAssertEqual(signedIn.user?.id, signedUp.user?.id)
        let token = try XCTUnwrap(signedIn.session?.accessToken)
        XCTAssertFalse(token.isEmpty)

        // The token works at AccountService itself…
        let me = try await withRPCClient(configuration: account.clientConfiguration()) { client in
            try await YediAccount.AccountService.Client(client).getMe(.init(), options: ServiceHarness.bearer(token))
        }
        XCTAssertEqual(me.email, "process-tls@example.com")

        // …and at ChatService: ListRooms is USER, so OK (an empty list) means the access check passed.
        let tampered = try Self.tampered(token, user: "someone-else")
        let otherKey = try harness.signedWithAnotherKey(user: try XCTUnwrap(signedUp.user?.id))
        let codes = try await withRPCClient(configuration: chat.clientConfiguration()) { client in
            let chatClient = YediChat.ChatService.Client(client)
            func listRooms(_ options: CallOptions) async -> StatusCode {
                await statusCode { _ = try await chatClient.listRooms(.init(), options: options) }
            }
            return (
                withToken: await listRooms(ServiceHarness.bearer(token)),
                withoutToken: await listRooms(CallOptions(timeout: .seconds(10))),
                tampered: await listRooms(ServiceHarness.bearer(tampered)),
                otherKey: await listRooms(ServiceHarness.bearer(otherKey))
            )
        }
        XCTAssertEqual(codes.withToken, .ok, "ChatService refused AccountService's token")
        XCTAssertEqual(codes.withoutToken, .unauthenticated)
        XCTAssertEqual(codes.tampered, .unauthenticated, "a token whose subject was changed was accepted")
        XCTAssertEqual(codes.otherKey, .unauthenticated, "a token signed with another key was accepted")
    }

    /// `token` with its subject changed to `user` and the original signature kept.
    static func tampered(_ token: String, user: String) throws -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(parts.count, 3)
        let payload = try XCTUnwrap(Base64URL.decode(parts[1]).map { String(decoding: $0, as: UTF8.self) })
        let subject = try XCTUnwrap(payload.range(of: #""sub":"[^"]*""#, options: .regularExpression))
        let changed = payload.replacingCharacters(in: subject, with: #""sub":"\#(user)""#)
        XCTAssertNotEqual(changed, payload)
        return [parts[0], Base64URL.encode(Array(changed.utf8)), parts[2]].joined(separator: ".")
    }
}

extension ServiceHarness {
    /// A well-formed, unexpired token for `user`, signed with the *other* test PKI's token key.
    func signedWithAnotherKey(user: String) throws -> String {
        let key = try TokenSigningKey.load(pemFile: pki.otherPKI.appendingPathComponent("token-signing.key").path)
        return try AccessTokenIssuer(signingKey: key).issue(userID: user, role: .customer, sessionID: "s-1").token
    }
}
