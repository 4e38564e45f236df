import Foundation
import GRDB
import Logging
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// The real AccountService executable, serving the repository's app files, is killed with SIGKILL in the
/// middle of a burst of Housetainer invitations: after a restart on the same data folder every
/// invitation it answered exists and its mail was sent (the development mail files), at least once.
final class HousetainerInvitationCrashTests: XCTestCase {
    private static let founders = 40
    private static let answeredBeforeKill = 60

    /// Founders (members nobody invited) written into the data folder before the first start.
    private func seedFounders(in dataDirectory: String) async throws {
        let database = try ServiceDatabase.open(
            directory: dataDirectory, name: "account", migrations: AccountServiceDefinition.migrate,
            logger: Logger(label: "test"))
        let clock = ManualClock()
        let store = SQLiteAccountStore(
            database: database,
            events: AccountEvents(outbox: Outbox(ids: SequentialIDGenerator(prefix: "j"), clock: clock)),
            revokedUsers: try await RevokedUsers(database: database, clock: clock))
        for index in 0..<Self.founders {
            let user = UserRecord(
                id: "founder-\(index)", role: "member", app: "housetainer", email: "founder\(index)@example.kr",
                name: "창립\(index)", phone: "", gender: 0, birthDate: nil, passwordHash: nil, createdAtMilliseconds: 0,
                nickname: "창립자\(String(UnicodeScalar(0xAC00 + index)!))")
            try await store.createUser(
                user, designer: nil,
                session: SessionRecord(
                    id: "s-founder-\(index)", familyID: "s-founder-\(index)", userID: user.id,
                    refreshHash: Array("h\(index)".utf8), createdAtMilliseconds: 0, expiresAtMilliseconds: 1))
        }
        try database.close()
    }

    func testHousetainerEveryInvitationAnsweredBeforeSIGKILLIsKeptAndMailedAfterARestart() async throws {
        let harness = try ServiceHarness()
        let nowhere = try ServiceHarness.unusedPort()
        let peers = ["content": nowhere, "booking": nowhere, "chat": nowhere]
        let dataDirectory = harness.dataRoot.appendingPathComponent("housetainer-crash").path
        try await seedFounders(in: dataDirectory)
        let arguments = ["--apps", AccountFixture.repositoryApps]
        let first = try await ServiceProcess.start(
            "AccountService", harness: harness, dataDirectory: dataDirectory, peers: peers, arguments: arguments)

        var answered: [String] = []  // codes
        var inFlight: [String] = []  // invitee addresses
        try await withRPCClient(configuration: first.clientConfiguration()) { client in
            let members = YediHousetainer.Members.Client(client)
            for index in 0..<(Self.founders * 3) {
                let founder = "founder-\(index / 3)"
                let options = ServiceHarness.bearer(
                    try harness.token(user: founder, role: "member", app: "housetainer"))
                let request = YediHousetainer.CreateInvitationRequest(
                    inviteeEmail: "guest\(index)@example.kr", inviteeName: "손님")
                guard answered.count == Self.answeredBeforeKill else {
                    answered.append(try await members.createInvitation(request, options: options).code)
                    continue
                }
                // The next invitation is in flight (or committing) when the process is killed.
                async let outcome = statusCode { _ = try await members.createInvitation(request, options: options) }
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...30)))
                first.kill()
                _ = await outcome
                inFlight.append(request.inviteeEmail)
                break
            }
        }
        XCTAssertEqual(answered.count, Self.answeredBeforeKill)

        let second = try await ServiceProcess.start(
            "AccountService", harness: harness, dataDirectory: dataDirectory, peers: peers, arguments: arguments)
        defer { second.stop() }
        let database = try ProcessTesting.openReadOnly(dataDirectory + "/account.sqlite")
        let stored = try await database.read { db in
            try String.fetchAll(db, sql: "SELECT code FROM housetainer_invitation")
        }
        XCTAssertTrue(Set(answered).isSubset(of: Set(stored)), "every answered invitation is kept")
        XCTAssertLessThanOrEqual(stored.count, answered.count + inFlight.count)
        let mailFolder = URL(fileURLWithPath: dataDirectory).appendingPathComponent("sent-mail")
        var mailed: Set<String> = []
        let allMailed = try await eventually(timeout: 30) {
            let mails = (try? DevelopmentFileSender.messages(in: mailFolder)) ?? []
            mailed = Set(mails.compactMap { $0.values["code"] })
            return Set(answered).isSubset(of: mailed)
        }
        XCTAssertTrue(allMailed, "unmailed: \(Set(answered).subtracting(mailed).sorted())")
    }
}
