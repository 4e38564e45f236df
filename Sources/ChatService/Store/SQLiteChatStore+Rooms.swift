import GRDB
import RPCAccess
import ServiceRuntime

/// Rooms as rows: a room's members and their roles (`chat_room_member`), rooms of any kind, closing.
extension SQLiteChatStore {
    func createRoom(id: String, kind: String, members: [RoomMemberRecord], now: Int64) async throws -> RoomRecord {
        precondition(!members.isEmpty, "a room has members")
        let sink = sink
        return try await database.write { db in
            try db.execute(
                sql: "INSERT INTO chat_room (id, kind, app, created_at_ms, last_activity_at_ms) VALUES (?, ?, ?, ?, ?)",
                arguments: [id, kind, RoomRecord.app(ofKind: kind).rawValue, now, now])
            var events: [ChatEventRecord] = []
            try Self.addMembers(members, roomID: id, now: now, db, events: &events)
            Self.publish(events, on: db, to: sink)
            guard let room = try Self.room(id, db) else { throw ChatStoreError.roomNotFound }
            return room
        }
    }

    func closeRoom(id: String, now: Int64) async throws -> RoomRecord {
        let sink = sink
        return try await database.write { db in
            // Leaves the open key's place free: the pair's next OpenRoom makes a new room.
            try db.execute(
                sql: "UPDATE chat_room SET closed_at_ms = ? WHERE id = ? AND closed_at_ms IS NULL",
                arguments: [now, id])
            let closed = db.changesCount == 1
            guard let room = try Self.room(id, db) else { throw ChatStoreError.roomNotFound }
            // The first closing tells each member (a room-closed event); a repeat tells no one.
            if closed {
                let events = try room.members.map { member in
                    try Self.appendEvent(
                        db, recipient: member, roomID: id, kind: "closed", now: now,
                        body: .roomClosed(roomID: id, closedAtMilliseconds: now))
                }
                Self.publish(events, on: db, to: sink)
            }
            return room
        }
    }

    /// Adds a new room's members and tells each of them with a room-created event; the room's activity
    /// (its place in the room list) is then its creation.
    static func addMembers(
        _ members: [RoomMemberRecord], roomID: String, now: Int64, _ db: Database, events: inout [ChatEventRecord]
    ) throws {
        for member in members {
            try db.execute(
                sql: "INSERT INTO chat_room_member (room_id, user_id, role) VALUES (?, ?, ?)",
                arguments: [roomID, member.userID, member.role])
        }
        guard let room = try room(roomID, db) else { throw ChatStoreError.roomNotFound }
        var last: Int64 = 0
        for member in room.members {
            let event = try appendEvent(
                db, recipient: member, roomID: roomID, kind: "room", now: now, body: .roomCreated(room))
            events.append(event)
            last = event.position
        }
        try db.execute(sql: "UPDATE chat_room SET activity_position = ? WHERE id = ?", arguments: [last, roomID])
    }

    static func room(_ id: String, _ db: Database) throws -> RoomRecord? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM chat_room WHERE id = ?"), arguments: [id])
            .map { try roomRecord($0, db) }
    }

    /// A `chat_room` row with its members, in the order they joined.
    static func roomRecord(_ row: Row, _ db: Database) throws -> RoomRecord {
        let id: String = row["id"]
        let memberships = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT user_id, role FROM chat_room_member WHERE room_id = ? ORDER BY rowid"),
            arguments: [id]
        ).map { RoomMemberRecord(userID: $0["user_id"], role: $0["role"]) }
        return RoomRecord(
            id: id, kind: row["kind"], memberships: memberships, createdAtMilliseconds: row["created_at_ms"],
            lastSeq: row["last_seq"], lastActivityAtMilliseconds: row["last_activity_at_ms"],
            closedAtMilliseconds: row["closed_at_ms"], app: AppID(rawValue: row["app"]))
    }
}
