import Foundation
import GRDB
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService
@testable import ChatService

/// SLP's match chat as the app uses it (issue 28, "Match chat"): catch-up by the server's sequence, never
/// a client's clock; history and live joined without a gap; a push to a member with no open stream.
final class ChatSlpMatchStreamTests: XCTestCase {
    private static let apps = ServiceHarness.repositoryApps

    var fixture: ChatFixture!

    override func setUp() async throws {
        fixture = try await ChatFixture.start(apps: Self.apps)
    }

    override func tearDown() async throws {
        try await fixture?.stop()
    }

    func testSlpAMemberWithoutAnOpenStreamGetsAPushAndOneWithAStreamDoesNot() async throws {
        let ana = try await fixture.slpMember("slp-ana")
        let bo = try await fixture.slpMember("slp-bo", device: "bo-phone")
        try await fixture.openMatchRoom(ana, bo)
        _ = try await fixture.send(ana, "m-1", "도서관 앞에서 봬요")
        let pushed = try await eventually(timeout: 20) { try await self.fixture.pushes(to: "slp-bo") == 1 }
        XCTAssertTrue(pushed, "Bo has no stream open: a push through AccountService")
        let push = try await eventually(timeout: 20) {
            let files = try DevelopmentFileSender.messages(
                in: self.fixture.account.environment.dataDirectory.appendingPathComponent("sent-push"))
            return files.contains { $0.to == "bo-phone" && $0.text.contains("도서관 앞에서 봬요") }
        }
        XCTAssertTrue(push, "to Bo's registered device")

        // With a stream open, the message comes by the stream and no push follows.
        let stream = StreamCollector()
        let chat = fixture.chat
        let reader = Task { await stream.run(chat, user: bo, after: 0) }
        let caughtUp = try await eventually(timeout: 10) { stream.caughtUp }
        XCTAssertTrue(caughtUp)
        let second = try await fixture.send(ana, "m-1", "5분 늦어요")
        let streamed = try await eventually(timeout: 10) {
            stream.realEvents.contains {
                if case .messageAdded(let added)? = $0.event { added.message?.id == second.id } else { false }
            }
        }
        XCTAssertTrue(streamed, "Bo's stream brought the second message")
        // Per peer the outbox delivers in order: once Ana's later push is in, one for Bo's second message
        // would be too.
        _ = try await fixture.send(bo, "m-1", "네")
        let anaPushed = try await eventually(timeout: 20) { try await self.fixture.pushes(to: "slp-ana") == 1 }
        XCTAssertTrue(anaPushed, "Ana has no stream: her push went through")
        reader.cancel()
        await reader.value
        let boPushes = try await fixture.pushes(to: "slp-bo")
        XCTAssertEqual(boPushes, 1, "Bo was online for the second message")
    }

    /// The push is queued in the message's own transaction: while ChatService's outbox refuses the job (a
    /// trigger standing in for a crash between two commits), the message is not stored either and the send
    /// fails; once the outbox takes it, the message and its push are there together.
    func testSlpTheMatchRoomPushIsQueuedInTheMessagesTransaction() async throws {
        let ana = try await fixture.slpMember("slp-ana")
        let bo = try await fixture.slpMember("slp-bo", device: "bo-phone")
        try await fixture.openMatchRoom(ana, bo)
        let chatDatabase = fixture.service.environment.database
        try await chatDatabase.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER test_refuse_pushes BEFORE INSERT ON runtime_outbox WHEN NEW.peer = 'account'
                    BEGIN SELECT RAISE(ABORT, 'the outbox refuses'); END
                    """)
        }
        let refused = await statusCode { _ = try await self.fixture.send(ana, "m-1", "먼저 가 있을게요") }
        XCTAssertNotEqual(refused, .ok, "the push could not be queued: the send fails")
        let stored = try await fixture.chat.listMessages(.init(roomID: "m-1"), options: bo.options)
        XCTAssertEqual(stored.messages.count, 0, "and the message was not stored without its push")

        try await chatDatabase.write { db in try db.execute(sql: "DROP TRIGGER test_refuse_pushes") }
        let sent = try await fixture.send(ana, "m-1", "먼저 가 있을게요")
        XCTAssertEqual(sent.seq, 1)
        let pushed = try await eventually(timeout: 20) { try await self.fixture.pushes(to: "slp-bo") == 1 }
        XCTAssertTrue(pushed, "the retried message and its push")
        let data = try await fixture.account.environment.database.read { db in
            try String.fetchOne(
                db, sql: "SELECT data FROM notification WHERE user_id = 'slp-bo' AND kind = ?",
                arguments: [OfflinePushes.kind])
        }
        XCTAssertEqual(data.map(Notifier.decode)?.first { $0.key == "seq" }?.value, "1")
    }

    /// 1,000 messages sent while the injected clock stands still (one millisecond for all of them), from
    /// both members at once: caught up by sequence in pages, none lost or repeated, from any cursor.
    func testSlpAThousandMessagesInOneMillisecondAreCaughtUpBySequence() async throws {
        let ana = try await fixture.slpMember("slp-ana")
        let bo = try await fixture.slpMember("slp-bo")
        try await fixture.openMatchRoom(ana, bo)
        // Bo's app holds the first message; the cursor is its sequence number.
        let first = try await fixture.send(ana, "m-1", "시작")
        let fixture = self.fixture!
        let sent = try await withThrowingTaskGroup(of: [String].self) { group in
            for worker in 0..<8 {
                let sender = worker.isMultiple(of: 2) ? ana : bo
                group.addTask {
                    var ids: [String] = []
                    for index in 0..<125 { ids.append(try await fixture.send(sender, "m-1", "\(worker)-\(index)").id) }
                    return ids
                }
            }
            return try await group.reduce(into: [String]()) { $0 += $1 }
        }
        XCTAssertEqual(Set(sent).count, 1_000)

        func catchUp(after cursor: Int64) async throws -> [YediChat.ChatMessage] {
            var messages: [YediChat.ChatMessage] = []
            var after = cursor
            while true {
                let page = try await fixture.chat.listMessages(
                    .init(roomID: "m-1", limit: 100, afterSeq: after), options: bo.options)
                messages += page.messages
                guard let last = page.messages.last else { return messages }
                after = last.seq
            }
        }
        let all = try await catchUp(after: first.seq)
        XCTAssertEqual(all.map(\.seq), Array(2...1_001), "every message once, in sequence")
        XCTAssertEqual(Set(all.map(\.id)), Set(sent))
        XCTAssertEqual(
            Set(all.map(\.sentAtMs)), [first.sentAtMs], "all in one millisecond: only the sequence orders them")
        let rest = try await catchUp(after: 500)
        XCTAssertEqual(rest.map(\.seq), Array(501...1_001), "from a cursor: exactly the later ones")
    }

    /// The original app's gap: it read the history, then opened the live connection, and a message sent in
    /// between was lost. ListRooms' `stream_position` joins them: that message arrives once.
    func testSlpAMessageSentBetweenListRoomsAndSubscribeArrivesExactlyOnce() async throws {
        let ana = try await fixture.slpMember("slp-ana")
        let bo = try await fixture.slpMember("slp-bo")
        try await fixture.openMatchRoom(ana, bo)
        _ = try await fixture.send(ana, "m-1", "before")
        let rooms = try await fixture.chat.listRooms(.init(), options: bo.options)
        XCTAssertEqual(rooms.rooms.map(\.id), ["m-1"])
        // The partner's name is the directory's (AccountService's BatchGetUsers): an SLP account's name is
        // its nickname, as SignUp stores it.
        XCTAssertEqual(rooms.rooms.first?.other?.name, "닉slp-ana")
        let between = try await fixture.send(ana, "m-1", "between")

        let stream = StreamCollector()
        let (chat, position) = (fixture.chat, rooms.streamPosition)
        let reader = Task { await stream.run(chat, user: bo, after: position, stopAfter: 2) }
        let caughtUp = try await eventually(timeout: 10) { stream.caughtUp }
        XCTAssertTrue(caughtUp)
        let live = try await fixture.send(ana, "m-1", "live")
        await reader.value
        let ids = stream.realEvents.compactMap { event -> String? in
            if case .messageAdded(let added)? = event.event { return added.message?.id }
            return nil
        }
        XCTAssertEqual(ids, [between.id, live.id], "the message between arrives once, then the live one")
    }
}
