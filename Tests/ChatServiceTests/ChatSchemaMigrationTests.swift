import Foundation
import GRDB
import Logging
import ServiceRuntime
import XCTest

@testable import ChatService

/// `chat-3` on a database that YeDi's ChatService filled under `chat-1` and `chat-2`: every room keeps
/// its id, members (now with their roles), messages, cursors and events, and the pair's OpenRoom finds it.
final class ChatSchemaMigrationTests: XCTestCase {
    func testChat3KeepsExistingRoomsMessagesAndEvents() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-chat-migration-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = URL(fileURLWithPath: directory).appendingPathComponent("chat.sqlite").path
        // A customer id that is not ASCII: the open key counts bytes, in SQL as in Swift.
        let customer = "고객-1"
        do {
            let old = try DatabaseQueue(path: path)
            var migrator = DatabaseMigrator()
            ChatSchema.migrate(&migrator)
            try migrator.migrate(old, upTo: "chat-2")
            try await old.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO chat_room (id, kind, customer_id, designer_id, created_at_ms, last_seq,
                            last_activity_at_ms, activity_position)
                        VALUES ('r1', 'consult', ?, 'd1', 100, 2, 300, 6), ('r2', 'consult', 'c2', 'd1', 150, 0, 150, 4);
                        INSERT INTO chat_room_member (room_id, user_id, read_seq, read_at_ms)
                        VALUES ('r1', ?, 0, 0), ('r1', 'd1', 1, 250), ('r2', 'c2', 0, 0), ('r2', 'd1', 0, 0);
                        INSERT INTO chat_message (room_id, seq, id, sender_id, client_message_id, sent_at_ms,
                            body_kind, text)
                        VALUES ('r1', 1, 'm1', ?, 'k1', 200, 'text', '안녕하세요'),
                            ('r1', 2, 'm2', 'd1', NULL, 300, 'text', '네');
                        INSERT INTO chat_event (position, recipient_id, room_id, kind, seq, created_at_ms)
                        VALUES (1, ?, 'r1', 'room', 0, 100), (2, 'd1', 'r1', 'room', 0, 100),
                            (3, 'c2', 'r2', 'room', 0, 150), (4, 'd1', 'r2', 'room', 0, 150),
                            (5, ?, 'r1', 'message', 1, 200), (6, 'd1', 'r1', 'message', 1, 200);
                        """, arguments: [customer, customer, customer, customer, customer])
            }
            try old.close()
        }
        let database = try ServiceDatabase.open(
            directory: directory, name: "chat", migrations: ChatServiceDefinition.migrate,
            logger: Logger(label: "test"))
        defer { try? database.close() }
        let store = SQLiteChatStore(database: database)

        let r1 = try await store.room(id: "r1")
        XCTAssertEqual(
            r1,
            RoomRecord(
                id: "r1", kind: "consult",
                memberships: [
                    RoomMemberRecord(userID: customer, role: RoomRole.customer),
                    RoomMemberRecord(userID: "d1", role: RoomRole.designer),
                ],
                createdAtMilliseconds: 100, lastSeq: 2, lastActivityAtMilliseconds: 300, closedAtMilliseconds: nil))
        let history = try await store.messages(roomID: "r1", beforeSeq: nil, limit: 10)
        XCTAssertEqual(history.messages.map(\.id), ["m2", "m1"])
        XCTAssertEqual(history.messages.last?.body, .text("안녕하세요"))
        XCTAssertEqual(history.readSeqs, [customer: 0, "d1": 1])
        let list = try await store.rooms(userID: "d1", app: .yedi, afterActivity: nil, limit: 10)
        XCTAssertEqual(list.rooms.map(\.room.id), ["r1", "r2"])
        XCTAssertEqual(list.rooms.first?.otherReadSeq, 0)
        XCTAssertEqual(list.rooms.first?.myReadSeq, 1)
        let events = try await store.events(recipientID: "d1", afterPosition: 0, limit: 10)
        XCTAssertEqual(events.map(\.position), [2, 4, 6])

        // The pair's OpenRoom finds its migrated room (the open key written by SQL is Swift's), and a retry
        // keeps its original message.
        let reopened = try await store.openRoom(
            kind: "consult", customerID: customer, designerID: "d1", newRoomID: "new", now: 400, postShare: nil)
        XCTAssertEqual(reopened.room.id, "r1")
        XCTAssertFalse(reopened.created)
        let retry = try await store.appendMessage(
            ChatStoreContract.draft("m9", room: "r1", from: customer, text: "again", clientID: "k1"))
        XCTAssertEqual(retry.message.id, "m1")
        let next = try await store.appendMessage(ChatStoreContract.draft("m3", room: "r1", from: "d1", text: "more"))
        XCTAssertEqual(next.message.seq, 3)
        // The rooms quota still counts what the customer opened: r2 was opened by c2 on its day.
        let quota = Quota(name: "rooms.day", limit: 1, counted: "chat rooms opened per day")
        do {
            _ = try await store.openRoom(
                kind: "consult", customerID: "c2", designerID: "d2", newRoomID: "r4", now: 160, postShare: nil,
                quota: quota)
            XCTFail("the migrated room was not counted")
        } catch let error as QuotaExceeded {
            XCTAssertEqual(error, QuotaExceeded(quota: quota))
        }
        // Messages and members still belong to chat_room: removing a room removes them.
        _ = try await store.purgeUser(userID: customer, delivery: nil, now: 500)
        let orphans = try await database.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COUNT(*) FROM chat_message WHERE room_id = 'r1')
                        + (SELECT COUNT(*) FROM chat_room_member WHERE room_id = 'r1')
                    """)
        }
        XCTAssertEqual(orphans, 0)
        let violations = try await database.read { db in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count }
        XCTAssertEqual(violations, 0)
    }
}
