import Foundation
import GRDB
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Account deletion reaches ContentService, BookingService and ChatService (stubs here that record
/// PurgeUser), whether they are up, down for a while, or the sender crashes right after answering.
final class AccountDeletionPeerTests: XCTestCase {
    private var harness: ServiceHarness!
    private var recorder: PurgeRecorder!

    override func setUpWithError() throws {
        harness = try ServiceHarness()
        recorder = PurgeRecorder.install()
    }

    func testDeletionPurgesTheUserFromEveryPeerAndTheOldPasswordNoLongerSignsIn() async throws {
        let stubs = try await PurgeStubSet.start(harness: harness)
        let fixture = try await AccountFixture.start(peers: try await stubs.ports())
        let request = SampleAccounts.customer("delete-me@example.com")
        let session = try await fixture.signUp(request)
        let userID = try XCTUnwrap(session.user?.id)
        let token = try XCTUnwrap(session.session?.accessToken)

        _ = try await fixture.account.deleteAccount(.init(password: request.password), options: fixture.options(token))

        for name in PurgeStubSet.names {
            let purged = try await eventually(timeout: 20) { self.recorder.applied(name) == [userID] }
            XCTAssertTrue(purged, "\(name) did not receive PurgeUser for \(userID): \(recorder.arrivals(name))")
        }
        let drained = try await eventually(timeout: 10) {
            try await fixture.service.environment.database.read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox")
            } == 0
        }
        XCTAssertTrue(drained, "delivered jobs stay in the outbox")
        let signIn = await statusCode {
            _ = try await fixture.account.signIn(.init(email: request.email, password: request.password))
        }
        XCTAssertEqual(signIn, .unauthenticated, "the deleted account's password still signs in")
        let me = await statusCode { _ = try await fixture.account.getMe(.init(), options: fixture.options(token)) }
        XCTAssertEqual(me, .unauthenticated, "an access token outlived its account")
        try await fixture.stop()
        try await stubs.stop()
    }

    func testAPeerThatIsDownGetsThePurgeOnceItComesUp() async throws {
        let chatPort = try ServiceHarness.unusedPort()
        var stubs = try await PurgeStubSet.start(["content", "booking"], harness: harness)
        var ports = try await stubs.ports()
        ports["chat"] = chatPort
        let fixture = try await AccountFixture.start(peers: ports)
        let request = SampleAccounts.customer("chat-is-down@example.com")
        let session = try await fixture.signUp(request)
        let userID = try XCTUnwrap(session.user?.id)
        let token = try XCTUnwrap(session.session?.accessToken)

        // Deletion does not wait for the peers: OK although chat is down.
        _ = try await fixture.account.deleteAccount(.init(password: request.password), options: fixture.options(token))
        for name in ["content", "booking"] {
            let purged = try await eventually(timeout: 20) { self.recorder.applied(name) == [userID] }
            XCTAssertTrue(purged, "\(name) did not receive PurgeUser")
        }
        let retried = try await eventually(timeout: 20) {
            try await fixture.service.environment.database.read { db in
                try Int.fetchOne(
                    db, sql: "SELECT attempts FROM runtime_outbox WHERE peer = 'chat'")
            }.map { $0 >= 2 } ?? false
        }
        XCTAssertTrue(retried, "the job for the peer that is down was not kept and retried")
        XCTAssertEqual(recorder.arrivals("chat"), [])

        try await stubs.start("chat", harness: harness, port: chatPort)
        let purged = try await eventually(timeout: 30) { self.recorder.applied("chat") == [userID] }
        XCTAssertTrue(purged, "chat did not receive PurgeUser once it came up")
        XCTAssertEqual(recorder.applied("content"), [userID], "a peer that already had it got it again")
        try await fixture.stop()
        try await stubs.stop()
    }

    /// The real executable is killed with SIGKILL just after DeleteAccount answered OK, while content holds
    /// its delivery (the worker delivers in order, so none has finished); after a restart on the same data
    /// folder every peer gets PurgeUser, and applies it once.
    func testDeletionSurvivesSIGKILLRightAfterItWasAnswered() async throws {
        recorder.hold("content")
        let stubs = try await PurgeStubSet.start(harness: harness)
        let ports = try await stubs.ports()
        let dataDirectory = harness.dataRoot.appendingPathComponent("account-process").path
        let first = try await ServiceProcess.start(
            "AccountService", harness: harness, dataDirectory: dataDirectory, peers: ports)
        let request = SampleAccounts.customer("crash-after-delete@example.com")
        let userID = try await withRPCClient(configuration: first.clientConfiguration()) { client in
            let account = YediAccount.AccountService.Client(client)
            let session = try await account.signUpCompletely(
                request, accountData: URL(fileURLWithPath: dataDirectory), options: CallOptions(timeout: .seconds(10)))
            _ = try await account.deleteAccount(
                .init(password: request.password),
                options: ServiceHarness.bearer(try XCTUnwrap(session.session?.accessToken)))
            return try XCTUnwrap(session.user?.id)
        }
        first.kill()
        XCTAssertEqual(recorder.applied("content"), [], "content was held, yet applied the purge")
        let beforeRestart = PurgeStubSet.names.map { "\($0): \(recorder.arrivals($0))" }
        // Let the held delivery (if it had arrived) finish into the void: its sender is gone.
        recorder.release("content")

        let second = try await ServiceProcess.start(
            "AccountService", harness: harness, dataDirectory: dataDirectory, peers: ports)
        defer { second.stop() }
        for name in PurgeStubSet.names {
            let purged = try await eventually(timeout: 30) { self.recorder.applied(name) == [userID] }
            XCTAssertTrue(
                purged,
                "\(name) did not receive PurgeUser after the restart (arrivals before it: \(beforeRestart)): \(second.errorOutput)"
            )
        }
        let database = try ProcessTesting.openReadOnly(dataDirectory + "/account.sqlite")
        let drained = try await eventually(timeout: 20) {
            try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox") } == 0
        }
        XCTAssertTrue(drained, "the restarted process did not clear its delivered jobs")
        let users = try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM user") }
        XCTAssertEqual(users, 0, "the deletion answered OK was lost")
        try database.close()
        try await stubs.stop()
    }
}
