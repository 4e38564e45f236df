import GRDB
import RPCAccess
import ServiceRuntime

/// `ChatStore` on the service's SQLite database (GRDB).
struct SQLiteChatStore: ChatStore {
    let database: ServiceDatabase
    /// Gets each transaction's events after it committed (GRDB runs commit hooks on its one writer
    /// queue, so they arrive in commit order, which is position order).
    let sink: ChatEventSink
    /// Queues a draft's `pushTo` pushes in its transaction; nil: none are queued (stores without an outbox).
    let pushes: OfflinePushes?

    init(database: ServiceDatabase, sink: @escaping ChatEventSink = { _ in }, pushes: OfflinePushes? = nil) {
        self.database = database
        self.sink = sink
        self.pushes = pushes
    }

    // MARK: Rooms

    func openRoom(
        kind: String, customerID: String, designerID: String, newRoomID: String, now: Int64,
        postShare: MessageDraft?, quota: Quota?
    ) async throws -> OpenedRoom {
        let sink = sink
        return try await database.write { db in
            var events: [ChatEventRecord] = []
            if let quota {
                try Self.checkRoomQuota(quota, kind: kind, customerID: customerID, designerID: designerID, now: now, db)
            }
            let key = RoomOpenKey.pair(customerID, designerID)
            // The partial unique index (one open room of a kind per key) decides between concurrent opens.
            try db.execute(
                sql: """
                    INSERT INTO chat_room (id, kind, app, open_key, opened_by, created_at_ms, last_activity_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (kind, open_key) WHERE closed_at_ms IS NULL DO NOTHING
                    """,
                arguments: [newRoomID, kind, RoomRecord.app(ofKind: kind).rawValue, key, customerID, now, now])
            let created = db.changesCount > 0
            if created {
                let members = [
                    RoomMemberRecord(userID: customerID, role: RoomRole.customer),
                    RoomMemberRecord(userID: designerID, role: RoomRole.designer),
                ]
                try Self.addMembers(members, roomID: newRoomID, now: now, db, events: &events)
            }
            guard
                var room = try Row.fetchOne(
                    db, sql: "SELECT * FROM chat_room WHERE kind = ? AND open_key = ? AND closed_at_ms IS NULL",
                    arguments: [kind, key]
                ).map({ try Self.roomRecord($0, db) })
            else { throw ChatStoreError.roomNotFound }
            var share: MessageRecord?
            if var draft = postShare {
                draft.roomID = room.id
                let appended = try Self.append(draft, db, events: &events)
                share = appended.message
                room.lastSeq = max(room.lastSeq, appended.message.seq)
                if !appended.duplicate { room.lastActivityAtMilliseconds = appended.message.sentAtMilliseconds }
            }
            Self.publish(events, on: db, to: sink)
            return OpenedRoom(room: room, created: created, postShare: share)
        }
    }

    func room(id: String) async throws -> RoomRecord? {
        try await database.read { db in
            try Self.room(id, db)
        }
    }

    func rooms(userID: String, app: AppID, afterActivity: Int64?, limit: Int) async throws -> RoomListRecord {
        try await database.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT r.*, me.read_seq AS my_read_seq,
                        (SELECT COALESCE(MAX(other.read_seq), 0) FROM chat_room_member other
                         WHERE other.room_id = r.id AND other.user_id <> me.user_id) AS other_read_seq,
                        (SELECT COUNT(*) FROM chat_message m
                         WHERE m.room_id = r.id AND m.seq > me.read_seq AND m.sender_id <> me.user_id) AS unread
                    FROM chat_room_member me
                    JOIN chat_room r ON r.id = me.room_id
                    WHERE me.user_id = ? AND r.app = ? AND r.activity_position < ?
                    ORDER BY r.activity_position DESC
                    LIMIT ?
                    """,
                arguments: [userID, app.rawValue, afterActivity ?? Int64.max, limit])
            var rooms: [RoomSummaryRecord] = []
            for row in rows {
                let room = try Self.roomRecord(row, db)
                let last =
                    room.lastSeq == 0
                    ? nil
                    : try Row.fetchOne(
                        db, sql: "SELECT * FROM chat_message WHERE room_id = ? AND seq = ?",
                        arguments: [room.id, room.lastSeq]
                    ).map(Self.messageRecord)
                rooms.append(
                    RoomSummaryRecord(
                        room: room, lastMessage: last, unreadCount: row["unread"], myReadSeq: row["my_read_seq"],
                        otherReadSeq: row["other_read_seq"], activityPosition: row["activity_position"]))
            }
            return RoomListRecord(
                rooms: rooms, totalUnread: try Self.totalUnread(userID, db),
                headPosition: try Int64.fetchOne(
                    db, sql: "SELECT MAX(position) FROM chat_event WHERE recipient_id = ?", arguments: [userID]) ?? 0)
        }
    }

    // MARK: Messages

    func appendMessage(_ draft: MessageDraft) async throws -> AppendedMessage {
        let (sink, pushes) = (sink, pushes)
        return try await database.write { db in
            var events: [ChatEventRecord] = []
            let appended = try Self.append(draft, db, events: &events, pushes: pushes)
            Self.publish(events, on: db, to: sink)
            return appended
        }
    }

    func messages(roomID: String, beforeSeq: Int64?, limit: Int) async throws -> MessagePage {
        try await database.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT * FROM chat_message WHERE room_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                arguments: [roomID, beforeSeq ?? Int64.max, limit + 1])
            return MessagePage(
                messages: rows.prefix(limit).map(Self.messageRecord), hasMore: rows.count > limit,
                readSeqs: try Self.readSeqs(roomID, db))
        }
    }

    func messages(roomID: String, afterSeq: Int64, limit: Int) async throws -> MessagePage {
        try await database.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT * FROM chat_message WHERE room_id = ? AND seq > ? ORDER BY seq ASC LIMIT ?",
                arguments: [roomID, afterSeq, limit + 1])
            return MessagePage(
                messages: rows.prefix(limit).map(Self.messageRecord), hasMore: rows.count > limit,
                readSeqs: try Self.readSeqs(roomID, db))
        }
    }

    // MARK: Read state

    func markRead(roomID: String, userID: String, upToSeq: Int64, now: Int64) async throws -> ReadMark {
        let sink = sink
        return try await database.write { db in
            guard let room = try Self.room(roomID, db) else { throw ChatStoreError.roomNotFound }
            guard
                let current = try Int64.fetchOne(
                    db, sql: "SELECT read_seq FROM chat_room_member WHERE room_id = ? AND user_id = ?",
                    arguments: [roomID, userID])
            else { throw ChatStoreError.notMember }
            let target = upToSeq <= 0 ? room.lastSeq : min(upToSeq, room.lastSeq)
            guard target > current else { return ReadMark(readSeq: current, moved: false) }
            try db.execute(
                sql: "UPDATE chat_room_member SET read_seq = ?, read_at_ms = ? WHERE room_id = ? AND user_id = ?",
                arguments: [target, now, roomID, userID])
            var events: [ChatEventRecord] = []
            for member in room.members {
                events.append(
                    try Self.appendEvent(
                        db, recipient: member, roomID: roomID, kind: "read", now: now,
                        body: .readCursorMoved(
                            roomID: roomID, readerID: userID, readSeq: target, readAtMilliseconds: now)))
            }
            Self.publish(events, on: db, to: sink)
            return ReadMark(readSeq: target, moved: true)
        }
    }

    func unreadCount(roomID: String, userID: String) async throws -> Int64? {
        try await database.read { db in
            try Int64.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COUNT(*) FROM chat_message m
                            WHERE m.room_id = me.room_id AND m.seq > me.read_seq AND m.sender_id <> me.user_id)
                    FROM chat_room_member me WHERE me.room_id = ? AND me.user_id = ?
                    """,
                arguments: [roomID, userID])
        }
    }

    func totalUnread(userID: String) async throws -> Int64 {
        try await database.read { db in try Self.totalUnread(userID, db) }
    }

    // MARK: Events

    /// One counter for every recipient here (the single writer orders it): the highest position given
    /// to anyone is a bound for each.
    func highestPosition(recipientID: String) async throws -> Int64 {
        try await database.read { db in
            // AUTOINCREMENT's high-water mark: unlike MAX(position) it does not go down when a purge
            // removed the newest events.
            try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'chat_event'") ?? 0
        }
    }

    func events(recipientID: String, afterPosition position: Int64, limit: Int) async throws -> [ChatEventRecord] {
        try await database.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM chat_event WHERE recipient_id = ? AND position > ? ORDER BY position LIMIT ?
                    """,
                arguments: [recipientID, position, limit])
            var events: [ChatEventRecord] = []
            events.reserveCapacity(rows.count)
            for row in rows {
                let roomID: String = row["room_id"]
                let body: ChatEventBody
                switch row["kind"] as String {
                case "message":
                    guard
                        let message = try Row.fetchOne(
                            db.cachedStatement(sql: "SELECT * FROM chat_message WHERE room_id = ? AND seq = ?"),
                            arguments: [roomID, row["seq"] as Int64]
                        ).map(Self.messageRecord)
                    else { continue }
                    body = .messageAdded(message)
                case "read":
                    body = .readCursorMoved(
                        roomID: roomID, readerID: row["reader_id"], readSeq: row["read_seq"],
                        readAtMilliseconds: row["read_at_ms"])
                case "closed":
                    // The closing time is kept in the event's read_at_ms column.
                    body = .roomClosed(roomID: roomID, closedAtMilliseconds: row["read_at_ms"])
                default:
                    guard let room = try Self.room(roomID, db) else { continue }
                    body = .roomCreated(room.asCreated)
                }
                events.append(ChatEventRecord(position: row["position"], recipientID: recipientID, body: body))
            }
            return events
        }
    }

    // MARK: Deletion

    func purgeUser(userID: String, delivery: Delivery?, now: Int64) async throws -> PurgedRooms {
        try await database.write { db in
            let first = try delivery.map { try ReceiptLedger.isFirstDelivery(in: db, $0, nowMilliseconds: now) }
            let rooms = try String.fetchAll(
                db, sql: "SELECT room_id FROM chat_room_member WHERE user_id = ?", arguments: [userID])
            try db.execute(sql: "DELETE FROM chat_event WHERE recipient_id = ?", arguments: [userID])
            try db.execute(sql: "DELETE FROM chat_event_pruned WHERE recipient_id = ?", arguments: [userID])
            for room in rooms {
                try db.execute(sql: "DELETE FROM chat_event WHERE room_id = ?", arguments: [room])
                // Members and messages go with the room (ON DELETE CASCADE).
                try db.execute(sql: "DELETE FROM chat_room WHERE id = ?", arguments: [room])
            }
            return PurgedRooms(roomIDs: rooms, firstDelivery: first ?? true)
        }
    }

    // MARK: Rows

    private static func append(
        _ draft: MessageDraft, _ db: Database, events: inout [ChatEventRecord], pushes: OfflinePushes? = nil
    ) throws -> AppendedMessage {
        guard let room = try Self.room(draft.roomID, db) else { throw ChatStoreError.roomNotFound }
        guard room.isMember(draft.senderID) else { throw ChatStoreError.notMember }
        if let clientID = draft.clientMessageID,
            let original = try Row.fetchOne(
                db.cachedStatement(
                    sql: "SELECT * FROM chat_message WHERE room_id = ? AND sender_id = ? AND client_message_id = ?"),
                arguments: [draft.roomID, draft.senderID, clientID]
            ).map(Self.messageRecord)
        {
            return AppendedMessage(message: original, duplicate: true)
        }
        guard !room.isClosed else { throw ChatStoreError.roomClosed }
        let message = MessageRecord(
            id: draft.id, roomID: draft.roomID, seq: room.lastSeq + 1, senderID: draft.senderID,
            sentAtMilliseconds: draft.sentAtMilliseconds, clientMessageID: draft.clientMessageID, body: draft.body)
        try insert(message, db)
        var last: Int64 = 0
        for member in room.members {
            let event = try appendEvent(
                db, recipient: member, roomID: room.id, kind: "message", now: message.sentAtMilliseconds,
                body: .messageAdded(message))
            events.append(event)
            last = event.position
        }
        try db.cachedStatement(
            sql: "UPDATE chat_room SET last_seq = ?, last_activity_at_ms = ?, activity_position = ? WHERE id = ?"
        ).execute(arguments: [message.seq, message.sentAtMilliseconds, last, room.id])
        if let pushes, case .text(let text) = draft.body {
            let recipients = draft.pushTo.filter { $0 != draft.senderID && room.isMember($0) }
            try pushes.enqueue(message, text: text, to: recipients, app: room.app.rawValue, in: db)
        }
        return AppendedMessage(message: message, duplicate: false)
    }

    private static func insert(_ message: MessageRecord, _ db: Database) throws {
        let columns = MessageColumns(message.body)
        try db.cachedStatement(
            sql: """
                INSERT INTO chat_message (room_id, seq, id, sender_id, client_message_id, sent_at_ms, body_kind,
                    text, ref_id, title, image_id, image_url, image_width, image_height, start_at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [
                message.roomID, message.seq, message.id, message.senderID, message.clientMessageID,
                message.sentAtMilliseconds, columns.kind, columns.text, columns.refID, columns.title,
                columns.image?.id, columns.image?.url ?? "", columns.image?.width ?? 0, columns.image?.height ?? 0,
                columns.startAt,
            ])
    }

    static func appendEvent(
        _ db: Database, recipient: String, roomID: String, kind: String, now: Int64, body: ChatEventBody
    ) throws -> ChatEventRecord {
        let columns = EventColumns(body)
        try db.cachedStatement(
            sql: """
                INSERT INTO chat_event (recipient_id, room_id, kind, seq, reader_id, read_seq, read_at_ms, created_at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [
                recipient, roomID, kind, columns.seq, columns.readerID, columns.readSeq, columns.readAt, now,
            ])
        return ChatEventRecord(position: db.lastInsertedRowID, recipientID: recipient, body: body)
    }

    static func publish(_ events: [ChatEventRecord], on db: Database, to sink: @escaping ChatEventSink) {
        guard !events.isEmpty else { return }
        db.afterNextTransaction(onCommit: { _ in sink(events) })
    }

    private static func totalUnread(_ userID: String, _ db: Database) throws -> Int64 {
        try Int64.fetchOne(
            db,
            sql: """
                SELECT COALESCE(SUM((SELECT COUNT(*) FROM chat_message m
                    WHERE m.room_id = me.room_id AND m.seq > me.read_seq AND m.sender_id <> me.user_id)), 0)
                FROM chat_room_member me WHERE me.user_id = ?
                """,
            arguments: [userID]) ?? 0
    }

    private static func readSeqs(_ roomID: String, _ db: Database) throws -> [String: Int64] {
        var seqs: [String: Int64] = [:]
        for row in try Row.fetchAll(
            db, sql: "SELECT user_id, read_seq FROM chat_room_member WHERE room_id = ?", arguments: [roomID])
        {
            seqs[row["user_id"]] = row["read_seq"]
        }
        return seqs
    }

    private static func messageRecord(_ row: Row) -> MessageRecord {
        let image: ImageRecord? = (row["image_id"] as String?).map {
            ImageRecord(id: $0, url: row["image_url"], width: row["image_width"], height: row["image_height"])
        }
        let columns = MessageColumns(
            kind: row["body_kind"], text: row["text"], refID: row["ref_id"], title: row["title"], image: image,
            startAt: row["start_at_ms"])
        return MessageRecord(
            id: row["id"], roomID: row["room_id"], seq: row["seq"], senderID: row["sender_id"],
            sentAtMilliseconds: row["sent_at_ms"], clientMessageID: row["client_message_id"], body: columns.body)
    }
}
