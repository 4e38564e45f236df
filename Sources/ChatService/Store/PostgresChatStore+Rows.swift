import PostgresNIO
import RPCAccess
import ServiceRuntime

/// A transaction's stream events before they have positions: collected while it works, positioned and
/// written last (`commit`), so the recipients' head rows are locked as briefly as possible and always in
/// the same order.
struct PendingChatEvents {
    private var items: [(recipient: String, roomID: String, kind: String, now: Int64, body: ChatEventBody)] = []

    mutating func add(recipient: String, roomID: String, kind: String, now: Int64, body: ChatEventBody) {
        items.append((recipient, roomID, kind, now, body))
    }

    /// Takes each recipient's next positions from its head row (recipients in user-id order, so two
    /// transactions never wait on each other's heads in opposite orders), writes the events, notifies
    /// `chat_events` with each recipient's last position, and moves each member's activity position to
    /// their last message or room-created event. Answers the events in the order they were added.
    func commit(_ tx: PostgresTransaction) async throws -> [ChatEventRecord] {
        guard !items.isEmpty else { return [] }
        var counts: [String: Int64] = [:]
        for item in items { counts[item.recipient, default: 0] += 1 }
        // One statement for every recipient's head, locked in one order (ORDER BY), each row once.
        let recipients = counts.keys.sorted()
        var next: [String: Int64] = [:]
        for row in try await tx.execute(ChatStatements.TakePositions.self, recipients, recipients.map { counts[$0]! }) {
            let (recipient, last) = try row.decode((String, Int64).self)
            next[recipient] = last - counts[recipient]! + 1
        }
        var events: [ChatEventRecord] = []
        var columns = EventRows()
        // Each member's last message or room-created position per room: their room list's order.
        var activity: [MemberOfRoom: Int64] = [:]
        for item in items {
            let position = next[item.recipient]!
            next[item.recipient] = position + 1
            events.append(ChatEventRecord(position: position, recipientID: item.recipient, body: item.body))
            columns.append(position: position, item.recipient, item.roomID, item.kind, item.now, item.body)
            if item.kind == "message" || item.kind == "room" {
                activity[MemberOfRoom(roomID: item.roomID, userID: item.recipient)] = position
            }
        }
        try await tx.execute(
            ChatStatements.InsertEvents.self, columns.recipients, columns.positions, columns.rooms, columns.kinds,
            columns.seqs, columns.readers, columns.readSeqs, columns.readAts, columns.createdAts)
        if !activity.isEmpty {
            let members = Array(activity)
            try await tx.execute(
                ChatStatements.MoveActivity.self, members.map(\.key.roomID), members.map(\.key.userID),
                members.map(\.value))
        }
        // Ids only: a body may be far larger than NOTIFY's 8,000 bytes, and each replica reads it anyway.
        let wakeUps = counts.keys.sorted().map { ChatEventHub.wakeUpPayload($0, position: next[$0]! - 1) }
        try await tx.execute(ChatStatements.Notify.self, PostgresChatStore.channel, wakeUps)
        return events
    }

    private struct MemberOfRoom: Hashable {
        var roomID: String
        var userID: String
    }

    /// `chat_event`'s columns as arrays, for one `INSERT … SELECT FROM unnest(…)`.
    private struct EventRows {
        var recipients: [String] = []
        var positions: [Int64] = []
        var rooms: [String] = []
        var kinds: [String] = []
        var seqs: [Int64] = []
        var readers: [String] = []
        var readSeqs: [Int64] = []
        var readAts: [Int64] = []
        var createdAts: [Int64] = []

        mutating func append(
            position: Int64, _ recipient: String, _ roomID: String, _ kind: String, _ now: Int64, _ body: ChatEventBody
        ) {
            let columns = EventColumns(body)
            recipients.append(recipient)
            positions.append(position)
            rooms.append(roomID)
            kinds.append(kind)
            seqs.append(columns.seq)
            readers.append(columns.readerID)
            readSeqs.append(columns.readSeq)
            readAts.append(columns.readAt)
            createdAts.append(now)
        }
    }
}

/// The rows `PostgresChatStore`'s methods share.
extension PostgresChatStore {
    static func fetch(_ query: PostgresQuery, _ connection: PostgresConnection) async throws
        -> [PostgresRandomAccessRow]
    {
        try await connection.query(query, logger: logger).collect().map { $0.makeRandomAccess() }
    }

    /// The room with its members in the order they joined; `locking` takes the room's row lock for the rest
    /// of the transaction (every change to a room takes it before it reads). One round trip: it is every
    /// send's first statement.
    static func room(_ id: String, _ connection: PostgresConnection, locking: Bool = false) async throws
        -> RoomRecord?
    {
        let rows =
            locking
            ? try await connection.execute(ChatStatements.LockRoom.self, id, logger: logger)
            : try await connection.execute(ChatStatements.RoomWithMembers.self, id, logger: logger)
        guard let row = rows.first?.makeRandomAccess() else { return nil }
        let ids = try row["member_ids"].decode([String].self)
        let roles = try row["member_roles"].decode([String].self)
        return try roomRecord(row, memberships: zip(ids, roles).map { RoomMemberRecord(userID: $0, role: $1) })
    }

    static func roomRecord(_ row: PostgresRandomAccessRow, _ connection: PostgresConnection) async throws
        -> RoomRecord
    {
        let id = try row["id"].decode(String.self)
        let memberships = try await fetch(
            "SELECT user_id, role FROM chat_room_member WHERE room_id = \(id) ORDER BY ordinal", connection
        ).map {
            RoomMemberRecord(userID: try $0["user_id"].decode(String.self), role: try $0["role"].decode(String.self))
        }
        return try roomRecord(row, memberships: memberships)
    }

    private static func roomRecord(_ row: PostgresRandomAccessRow, memberships: [RoomMemberRecord]) throws
        -> RoomRecord
    {
        RoomRecord(
            id: try row["id"].decode(String.self), kind: try row["kind"].decode(String.self), memberships: memberships,
            createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self),
            lastSeq: try row["last_seq"].decode(Int64.self),
            lastActivityAtMilliseconds: try row["last_activity_at_ms"].decode(Int64.self),
            closedAtMilliseconds: try row["closed_at_ms"].decode(Int64?.self),
            app: AppID(rawValue: try row["app"].decode(String.self)))
    }

    /// A `chat_message` row; `prefix` names its columns when they come joined to another table's.
    static func messageRecord(_ row: PostgresRandomAccessRow, prefix: String = "") throws -> MessageRecord {
        let image: ImageRecord? = try row[prefix + "image_id"].decode(String?.self).map {
            ImageRecord(
                id: $0, url: try row[prefix + "image_url"].decode(String.self),
                width: try row[prefix + "image_width"].decode(Int32.self),
                height: try row[prefix + "image_height"].decode(Int32.self))
        }
        let columns = MessageColumns(
            kind: try row[prefix + "body_kind"].decode(String.self), text: try row[prefix + "text"].decode(String.self),
            refID: try row[prefix + "ref_id"].decode(String.self), title: try row[prefix + "title"].decode(String.self),
            image: image, startAt: try row[prefix + "start_at_ms"].decode(Int64.self))
        return MessageRecord(
            id: try row[prefix + "id"].decode(String.self), roomID: try row[prefix + "room_id"].decode(String.self),
            seq: try row[prefix + "seq"].decode(Int64.self),
            senderID: try row[prefix + "sender_id"].decode(String.self),
            sentAtMilliseconds: try row[prefix + "sent_at_ms"].decode(Int64.self),
            clientMessageID: try row[prefix + "client_message_id"].decode(String?.self), body: columns.body)
    }

    static func readSeqs(_ roomID: String, _ connection: PostgresConnection) async throws -> [String: Int64] {
        var seqs: [String: Int64] = [:]
        for row in try await fetch(
            "SELECT user_id, read_seq FROM chat_room_member WHERE room_id = \(roomID)", connection)
        {
            seqs[try row["user_id"].decode(String.self)] = try row["read_seq"].decode(Int64.self)
        }
        return seqs
    }

    static func totalUnread(_ userID: String, _ connection: PostgresConnection) async throws -> Int64 {
        try await fetch(
            """
            SELECT COALESCE(SUM((SELECT COUNT(*) FROM chat_message m
                WHERE m.room_id = me.room_id AND m.seq > me.read_seq AND m.sender_id <> me.user_id)), 0)::bigint AS total
            FROM chat_room_member me WHERE me.user_id = \(userID)
            """, connection
        ).first?["total"].decode(Int64.self) ?? 0
    }

    /// The recipient's last position given out (0: none yet).
    static func head(_ userID: String, _ connection: PostgresConnection) async throws -> Int64 {
        try await connection.execute(ChatStatements.Head.self, userID, logger: logger).first?
            .makeRandomAccess()["last_position"].decode(Int64.self) ?? 0
    }
}
