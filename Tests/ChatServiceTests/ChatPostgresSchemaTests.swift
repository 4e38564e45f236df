import Foundation
import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import ChatService
@testable import ServiceRuntime

/// ChatSchema's versions on PostgreSQL keep the rows written at an earlier version: a consult room made at
/// `chat-1` (customer and designer columns) is the pair's open room after `chat-3` (roles, open key), and a
/// match room made at `chat-3` belongs to SLP after `chat-4-room-apps`.
final class ChatPostgresSchemaTests: XCTestCase {
    private let all = RuntimePostgresSchema.migrations + ChatPostgresSchema.migrations

    /// A database migrated up to `version` (inclusive), given `rows`, then migrated to the newest version;
    /// `check` runs on a store over it.
    private func upgrade(
        from version: String, rows: [String], check: (PostgresChatStore) async throws -> Void
    ) async throws {
        let upTo = try XCTUnwrap(all.firstIndex { $0.name == version })
        let database = try await TestDatabase(service: "chat", migrations: Array(all[...upTo]))
        do {
            try await database.postgres.write { tx in
                for row in rows { try await tx.query(PostgresQuery(unsafeSQL: row)) }
            }
            try await PostgresMigrator.migrate(database.postgres, service: "chat", migrations: all)
            try await check(PostgresChatStore(postgres: database.postgres))
        } catch {
            try? await database.close()
            throw error
        }
        try await database.close()
    }

    func testAConsultRoomWrittenAtTheFirstVersionIsThePairsOpenRoomAfterwards() async throws {
        try await upgrade(
            from: "chat-1",
            rows: [
                """
                INSERT INTO chat_room (id, kind, customer_id, designer_id, created_at_ms, last_seq, last_activity_at_ms)
                VALUES ('r1', 'consult', 'c1', 'd1', 1, 1, 2)
                """,
                "INSERT INTO chat_room_member (room_id, user_id, ordinal) VALUES ('r1', 'c1', 0), ('r1', 'd1', 1)",
                """
                INSERT INTO chat_message (room_id, seq, id, sender_id, sent_at_ms, body_kind, text)
                VALUES ('r1', 1, 'm1', 'c1', 2, 'text', '안녕하세요')
                """,
                "INSERT INTO chat_stream_head (user_id, last_position) VALUES ('c1', 2), ('d1', 2)",
                """
                INSERT INTO chat_event (recipient_id, position, room_id, kind, seq, created_at_ms)
                VALUES ('c1', 1, 'r1', 'room', 0, 1), ('d1', 1, 'r1', 'room', 0, 1),
                    ('c1', 2, 'r1', 'message', 1, 2), ('d1', 2, 'r1', 'message', 1, 2)
                """,
            ]
        ) { store in
            let opened = try await store.openRoom(
                kind: "consult", customerID: "c1", designerID: "d1", newRoomID: "new", now: 10, postShare: nil)
            XCTAssertEqual(opened.room.id, "r1", "the open key was written from the old columns")
            XCTAssertFalse(opened.created)
            XCTAssertEqual(opened.room.customerID, "c1")
            XCTAssertEqual(opened.room.designerID, "d1")
            XCTAssertEqual(opened.room.app, .yedi)
            let next = try await store.appendMessage(ChatStoreContract.draft("m2", room: "r1", from: "d1", text: "네"))
            XCTAssertEqual(next.message.seq, 2)
            let events = try await store.events(recipientID: "c1", afterPosition: 0, limit: 10)
            XCTAssertEqual(events.map(\.position), [1, 2, 3], "positions go on from the head")
            guard case .messageAdded(let first) = events[1].body else { return XCTFail("\(events)") }
            XCTAssertEqual(first.body, .text("안녕하세요"))
        }
    }

    func testAMatchRoomWrittenBeforeAppsBelongsToSLPAfterwards() async throws {
        try await upgrade(
            from: "chat-3",
            rows: [
                """
                INSERT INTO chat_room (id, kind, created_at_ms, last_activity_at_ms)
                VALUES ('match-1', 'slp-match', 1, 1)
                """,
                """
                INSERT INTO chat_room_member (room_id, user_id, ordinal, role, activity_position)
                VALUES ('match-1', 'u1', 0, 'member', 1), ('match-1', 'u2', 1, 'member', 1)
                """,
                "INSERT INTO chat_stream_head (user_id, last_position) VALUES ('u1', 1), ('u2', 1)",
            ]
        ) { store in
            let slp = try await store.rooms(userID: "u1", app: "slp", afterActivity: nil, limit: 10)
            XCTAssertEqual(slp.rooms.map(\.room.id), ["match-1"])
            let yedi = try await store.rooms(userID: "u1", app: .yedi, afterActivity: nil, limit: 10)
            XCTAssertEqual(yedi.rooms, [])
        }
    }
}
