import Foundation
import GRDB
import RPCCore
import RPCTestSupport
import ServiceTestSupport
import XCTest
import YediProto

/// The real AccountService executable is killed with SIGKILL in the middle of a burst of sign-ups: every
/// sign-up it answered OK signs in after a restart on the same data folder, and the database is intact.
final class AccountCrashTests: XCTestCase {
    /// Sign-ups answered before the kill. The executable hashes at the production scrypt cost (about
    /// 170 ms each on the development machine), so this stays modest.
    private static let answeredBeforeKill = 25

    func testEverySignUpAnsweredBeforeSIGKILLSignsInAfterARestart() async throws {
        let harness = try ServiceHarness()
        let nowhere = try ServiceHarness.unusedPort()
        let peers = ["content": nowhere, "booking": nowhere, "chat": nowhere]
        let dataDirectory = harness.dataRoot.appendingPathComponent("account-crash").path
        let first = try await ServiceProcess.start(
            "AccountService", harness: harness, dataDirectory: dataDirectory, peers: peers)
        let run = "\(UInt32.random(in: 0...UInt32.max))"
        func email(_ index: Int) -> String { "burst-\(run)-\(index)@example.com" }

        var answered: [String] = []
        var unknown: [String] = []
        try await withRPCClient(configuration: first.clientConfiguration()) { client in
            let account = YediAccount.AccountService.Client(client)
            for index in 0..<200 {
                let request = SampleAccounts.customer(email(index))
                guard answered.count == Self.answeredBeforeKill else {
                    _ = try await account.signUpCompletely(
                        request, accountData: URL(fileURLWithPath: dataDirectory),
                        options: CallOptions(timeout: .seconds(10)))
                    answered.append(request.email)
                    continue
                }
                // The next sign-up is in flight (hashing or committing) when the process is killed.
                async let outcome = statusCode {
                    _ = try await account.signUpCompletely(
                        request, accountData: URL(fileURLWithPath: dataDirectory),
                        options: CallOptions(timeout: .seconds(10)))
                }
                try await Task.sleep(for: .milliseconds(Int.random(in: 20...250)))
                first.kill()
                if await outcome == .ok { answered.append(request.email) } else { unknown.append(request.email) }
                break
            }
        }
        XCTAssertGreaterThanOrEqual(answered.count, Self.answeredBeforeKill)

        let second = try await ServiceProcess.start(
            "AccountService", harness: harness, dataDirectory: dataDirectory, peers: peers)
        defer { second.stop() }
        try await withRPCClient(configuration: second.clientConfiguration()) { client in
            let account = YediAccount.AccountService.Client(client)
            for email in answered {
                let code = await statusCode {
                    _ = try await account.signIn(
                        .init(email: email, password: SampleAccounts.customer().password),
                        options: CallOptions(timeout: .seconds(10)))
                }
                XCTAssertEqual(code, .ok, "\(email) was answered OK before the kill but cannot sign in")
            }
            // The one in flight either committed whole or not at all.
            for email in unknown {
                let code = await statusCode {
                    _ = try await account.signIn(
                        .init(email: email, password: SampleAccounts.customer().password),
                        options: CallOptions(timeout: .seconds(10)))
                }
                XCTAssertTrue([.ok, .unauthenticated].contains(code), "\(email): \(code)")
            }
        }

        let database = try ProcessTesting.openReadOnly(dataDirectory + "/account.sqlite")
        let (integrity, users, sessions) = try await database.read { db in
            (
                try String.fetchOne(db, sql: "PRAGMA integrity_check"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM user") ?? 0,
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM session WHERE user_id NOT IN (SELECT id FROM user)")
                    ?? 0
            )
        }
        XCTAssertEqual(integrity, "ok")
        XCTAssertGreaterThanOrEqual(users, answered.count)
        XCTAssertLessThanOrEqual(users, answered.count + unknown.count)
        XCTAssertEqual(sessions, 0, "sessions without their user")
        try database.close()
    }
}
