import Foundation
import GRDB
import Logging
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// SLP's crash test (issue 28, "Acceptance"): the real AccountService executable is killed with SIGKILL
/// while members accept requests and end matches at random, beside a real ChatService. After a restart on
/// the same data: every member is in at most one active match whose partner names them back and nobody
/// matched is queued; every accept answered MATCHED and every end answered ENDED is there; and once
/// AccountService's outbox has drained, every active match has an open room and every ended one a closed
/// room in ChatService.
final class SlpCrashTests: XCTestCase {
    private static let members = 80

    private static func id(_ index: Int) -> String { "slp-\(String(format: "%03d", (index + members) % members))" }

    /// Every member queued at City Hall; each has requested the next two (so each can accept the two before).
    private static func seed(_ directory: String) async throws {
        let database = try ServiceDatabase.open(
            directory: directory, name: "account", migrations: AccountServiceDefinition.migrate,
            logger: Logger(label: "seed"))
        defer { try? database.close() }
        let now = Int64(Date().timeIntervalSince1970 * 1_000)
        try await database.write { db in
            for index in 0..<members {
                try SQLiteAccountStore.insert(
                    UserRecord(
                        id: id(index), role: "member", app: "slp", email: "", name: id(index), phone: "", gender: 1,
                        birthDate: nil, passwordHash: nil, createdAtMilliseconds: now, nickname: "닉\(index)"), db)
                try SQLiteSlpStore.insert(
                    SlpProfileRecord(
                        userID: id(index), gender: 1, birthDate: DateParts(year: 1998, month: 3, day: 4),
                        email: "\(index)@example.com", createdAtMilliseconds: now), db)
            }
        }
        let store = SQLiteSlpStore(database: database, notifier: nil, events: nil)
        for index in 0..<members {
            let entered = try await store.enterQueue(
                userID: id(index), at: SlpStoreContract.cityHall, studies: [], now: now)
            XCTAssertEqual(entered, .entered)
        }
        for index in 0..<members {
            for step in 1...2 {
                let sent = try await store.request(
                    from: id(index), to: id(index + step), matchID: "unused-\(index)-\(step)", now: now)
                XCTAssertEqual(sent, .sent)
            }
        }
    }

    private struct Acknowledged: Sendable {
        var accepts: [String: String] = [:]  // match id → the accepting member
        var ends: [String] = []  // match ids
        var count: Int { accepts.count + ends.count }
    }

    func testSlpSIGKILLDuringAcceptsAndEndsKeepsThePairingAndEveryAcknowledgedAccept() async throws {
        let harness = try ServiceHarness()
        let nowhere = try ServiceHarness.unusedPort()
        let (accountPort, chatPort) = (try ServiceHarness.unusedPort(), try ServiceHarness.unusedPort())
        let accountData = harness.dataRoot.appendingPathComponent("account").path
        let chatData = harness.dataRoot.appendingPathComponent("chat").path
        try await Self.seed(accountData)
        let apps = ["--apps", AccountFixture.appsFolder]
        let accountPeers = ["content": nowhere, "booking": nowhere, "chat": chatPort]
        let chat = try await ServiceProcess.start(
            "ChatService", harness: harness, dataDirectory: chatData,
            peers: ["account": accountPort, "content": nowhere, "booking": nowhere], port: chatPort, arguments: apps)
        defer { chat.stop() }
        let first = try await ServiceProcess.start(
            "AccountService", harness: harness, dataDirectory: accountData, peers: accountPeers, port: accountPort,
            arguments: apps)

        var tokens: [String: CallOptions] = [:]
        for index in 0..<Self.members {
            tokens[Self.id(index)] = ServiceHarness.bearer(
                try harness.token(user: Self.id(index), role: "member", app: "slp"), timeout: .seconds(10))
        }
        let tokensByMember = tokens
        let acknowledged = LockedValue(Acknowledged())
        try await withRPCClient(configuration: first.clientConfiguration()) { client in
            let matching = YediSlp.Matching.Client(client)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<Self.members {
                    group.addTask {
                        var random = SystemRandomNumberGenerator()
                        let me = Self.id(index)
                        let options = tokensByMember[me]!
                        let other = Self.id(index - Int.random(in: 1...2, using: &random))
                        try await Task.sleep(for: .milliseconds(Int.random(in: 0...200, using: &random)))
                        guard
                            let accepted = try? await matching.accept(.init(otherID: other), options: options),
                            accepted.outcome == .matched
                        else { return }
                        acknowledged.withLock { $0.accepts[accepted.matchID] = me }
                        guard Bool.random(using: &random) else { return }
                        guard let ended = try? await matching.endMatch(.init(otherID: other), options: options),
                            ended.outcome == .ended
                        else { return }
                        acknowledged.withLock { $0.ends.append(accepted.matchID) }
                    }
                }
                // SIGKILL in the middle of the burst: after some answers, at a random moment.
                group.addTask {
                    _ = try await eventually(timeout: 30) { acknowledged.withLock { $0.count } >= 16 }
                    try await Task.sleep(for: .milliseconds(Int.random(in: 0...60)))
                    first.kill()
                }
                try await group.waitForAll()
            }
        }
        let answered = acknowledged.withLock { $0 }
        XCTAssertGreaterThanOrEqual(answered.accepts.count, 5, "the kill came after some accepts")

        let second = try await ServiceProcess.start(
            "AccountService", harness: harness, dataDirectory: accountData, peers: accountPeers, port: accountPort,
            arguments: apps)
        defer { second.stop() }
        let account = try ProcessTesting.openReadOnly(accountData + "/account.sqlite")

        // The pairing invariant, read from the restarted service's database.
        let (active, queuedAndMatched, matches) = try account.read { db in
            (
                try Row.fetchAll(
                    db, sql: "SELECT match_id, user_id, partner_id FROM slp_match_member WHERE active = 1"),
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT COUNT(*) FROM slp_queue q JOIN slp_match_member m ON m.user_id = q.user_id AND m.active = 1
                        """) ?? -1,
                try Row.fetchAll(db, sql: "SELECT id, ended_at_ms FROM slp_match")
            )
        }
        var partnerOf: [String: (match: String, partner: String)] = [:]
        for row in active {
            let user: String = row["user_id"]
            XCTAssertNil(partnerOf[user], "\(user) has two active matches")
            partnerOf[user] = (row["match_id"], row["partner_id"])
        }
        for (user, pair) in partnerOf {
            XCTAssertEqual(partnerOf[pair.partner]?.partner, user, "\(user)'s partner does not name them back")
            XCTAssertEqual(partnerOf[pair.partner]?.match, pair.match)
        }
        XCTAssertEqual(queuedAndMatched, 0, "a matched member is still queued")
        let ended = Dictionary(
            uniqueKeysWithValues: matches.map { ($0["id"] as String, ($0["ended_at_ms"] as Int64?) != nil) })
        for (matchID, member) in answered.accepts {
            XCTAssertNotNil(ended[matchID], "\(member)'s acknowledged match \(matchID) is gone")
        }
        for matchID in answered.ends { XCTAssertEqual(ended[matchID], true, "acknowledged end of \(matchID) lost") }
        for (matchID, isEnded) in ended {
            let members = active.filter { ($0["match_id"] as String) == matchID }.count
            XCTAssertEqual(members, isEnded ? 0 : 2, "match \(matchID): ended \(isEnded), \(members) active members")
        }

        // Once the outbox drained, ChatService has a room per match, closed exactly when the match ended.
        let drained = try await eventually(timeout: 60) {
            try await account.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox") == 0 }
        }
        XCTAssertTrue(drained, "AccountService's outbox did not drain")
        let rooms = try ProcessTesting.openReadOnly(chatData + "/chat.sqlite").read { db in
            try Row.fetchAll(db, sql: "SELECT id, closed_at_ms FROM chat_room WHERE kind = 'slp-match'")
        }
        let closed = Dictionary(
            uniqueKeysWithValues: rooms.map { ($0["id"] as String, ($0["closed_at_ms"] as Int64?) != nil) })
        for (matchID, isEnded) in ended {
            XCTAssertEqual(
                closed[matchID], isEnded,
                "match \(matchID) (ended: \(isEnded)) has room \(String(describing: closed[matchID]))")
        }
        XCTAssertEqual(Set(closed.keys), Set(ended.keys), "a room without a match")
        print(
            "SlpCrashTests: \(answered.accepts.count) accepts and \(answered.ends.count) ends acknowledged; \(ended.count) matches after the restart, \(ended.values.filter { $0 }.count) ended"
        )
    }
}
