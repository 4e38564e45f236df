import Logging
import PostgresNIO
import RPCAccess
import ServiceRuntime

/// `ChatStore` on the service's PostgreSQL database, for several replicas sharing it (docs/postgres.md,
/// "Chat on PostgreSQL"). Plain SQL with interpolated binds, the send's and the streams' statements prepared
/// (`ChatStatements`); nothing shared with the SQLite store but the protocol and its contract.
///
/// What SQLite's single writer gave, a lock gives here: every change to a room (a send, a read mark, a
/// close) first locks the room's row, which orders the room's seqs and makes the client-id check see
/// every earlier send; stream positions come from each recipient's head row (`ChatPostgresSchema`),
/// taken last and in user-id order, so they follow commit order and two transactions never wait on each
/// other in opposite orders. Each writing transaction also sends `NOTIFY chat_events` with
/// `recipient:position` (ids only, never a body), which every replica's listener turns into wake-ups of
/// its local streams; the sink gets the committed events on this replica.
struct PostgresChatStore: ChatStore {
    let postgres: ServicePostgres
    /// Gets each transaction's events after it committed (this replica's wake-ups; tests).
    let sink: ChatEventSink
    /// Queues a draft's `pushTo` pushes in its transaction; nil: none are queued (stores without an outbox).
    let pushes: OfflinePushes?

    static let logger = Logger(label: "yedi.chat.postgres")
    /// The channel the writers notify and every replica listens on.
    static let channel = "chat_events"

    init(postgres: ServicePostgres, sink: @escaping ChatEventSink = { _ in }, pushes: OfflinePushes? = nil) {
        self.postgres = postgres
        self.sink = sink
        self.pushes = pushes
    }

    // MARK: Messages

    func appendMessage(_ draft: MessageDraft) async throws -> AppendedMessage {
        try await postgres.write { [sink, pushes] tx in
            var pending = PendingChatEvents()
            let appended = try await Self.append(draft, tx, events: &pending, pushes: pushes)
            let events = try await pending.commit(tx)
            tx.afterCommit { if !events.isEmpty { sink(events) } }
            return appended
        }
    }

    func messages(roomID: String, beforeSeq: Int64?, limit: Int) async throws -> MessagePage {
        try await postgres.snapshot { tx in
            let rows = try await Self.fetch(
                """
                SELECT * FROM chat_message WHERE room_id = \(roomID) AND seq < \(beforeSeq ?? Int64.max)
                ORDER BY seq DESC LIMIT \(limit + 1)
                """, tx.connection)
            return MessagePage(
                messages: try rows.prefix(limit).map { try Self.messageRecord($0) }, hasMore: rows.count > limit,
                readSeqs: try await Self.readSeqs(roomID, tx.connection))
        }
    }

    func messages(roomID: String, afterSeq: Int64, limit: Int) async throws -> MessagePage {
        try await postgres.snapshot { tx in
            let rows = try await Self.fetch(
                """
                SELECT * FROM chat_message WHERE room_id = \(roomID) AND seq > \(afterSeq)
                ORDER BY seq ASC LIMIT \(limit + 1)
                """, tx.connection)
            return MessagePage(
                messages: try rows.prefix(limit).map { try Self.messageRecord($0) }, hasMore: rows.count > limit,
                readSeqs: try await Self.readSeqs(roomID, tx.connection))
        }
    }

    // MARK: Read state

    /// Under the room's lock, like a send: the cursor's target is read from the room that no send can
    /// move meanwhile, and the conditional update keeps it from going backwards.
    func markRead(roomID: String, userID: String, upToSeq: Int64, now: Int64) async throws -> ReadMark {
        try await postgres.write { [sink] tx in
            guard let room = try await Self.room(roomID, tx.connection, locking: true) else {
                throw ChatStoreError.roomNotFound
            }
            guard
                let current = try await Self.fetch(
                    "SELECT read_seq FROM chat_room_member WHERE room_id = \(roomID) AND user_id = \(userID)",
                    tx.connection
                ).first?["read_seq"].decode(Int64.self)
            else { throw ChatStoreError.notMember }
            let target = upToSeq <= 0 ? room.lastSeq : min(upToSeq, room.lastSeq)
            guard target > current else { return ReadMark(readSeq: current, moved: false) }
            try await tx.query(
                """
                UPDATE chat_room_member SET read_seq = \(target), read_at_ms = \(now)
                WHERE room_id = \(roomID) AND user_id = \(userID) AND read_seq < \(target)
                """)
            var pending = PendingChatEvents()
            for member in room.members {
                pending.add(
                    recipient: member, roomID: roomID, kind: "read", now: now,
                    body: .readCursorMoved(roomID: roomID, readerID: userID, readSeq: target, readAtMilliseconds: now))
            }
            let events = try await pending.commit(tx)
            tx.afterCommit { sink(events) }
            return ReadMark(readSeq: target, moved: true)
        }
    }

    func unreadCount(roomID: String, userID: String) async throws -> Int64? {
        try await postgres.read { connection in
            try await Self.fetch(
                """
                SELECT (SELECT COUNT(*) FROM chat_message m
                        WHERE m.room_id = me.room_id AND m.seq > me.read_seq AND m.sender_id <> me.user_id) AS unread
                FROM chat_room_member me WHERE me.room_id = \(roomID) AND me.user_id = \(userID)
                """, connection
            ).first?["unread"].decode(Int64.self)
        }
    }

    func totalUnread(userID: String) async throws -> Int64 {
        try await postgres.read { connection in try await Self.totalUnread(userID, connection) }
    }

    // MARK: Events

    /// The recipient's head: positions are per recipient here, and the head is kept when a purge removes
    /// the events, so it never goes down.
    func highestPosition(recipientID: String) async throws -> Int64 {
        try await postgres.read { connection in try await Self.head(recipientID, connection) }
    }

    /// One statement, outside a transaction (`BEGIN` and `COMMIT` around it would triple its round trips):
    /// each message event joined to its message row.
    func events(recipientID: String, afterPosition position: Int64, limit: Int) async throws -> [ChatEventRecord] {
        try await postgres.read { connection in
            let rows = try await connection.execute(
                ChatStatements.EventsAfter.self, recipientID, position, limit, logger: Self.logger)
            return try await Self.events(rows.map { $0.makeRandomAccess() }, of: recipientID, connection)
        }
    }

    /// What a stream reads on every wake-up, in one statement: its events and its pruning watermark, one
    /// snapshot (so the watermark cannot miss a pruning that the events saw, nor the reverse).
    func eventsAndWatermark(recipientID: String, afterPosition position: Int64, limit: Int) async throws -> (
        events: [ChatEventRecord], prunedThrough: Int64
    ) {
        try await postgres.read { connection in
            let rows = try await connection.execute(
                ChatStatements.EventsAndWatermark.self, recipientID, position, limit, logger: Self.logger
            ).map { $0.makeRandomAccess() }
            let pruned = try rows.first?["pruned"].decode(Int64.self) ?? 0
            let events = try rows.filter { try $0["position"].decode(Int64?.self) != nil }
            return (try await Self.events(events, of: recipientID, connection), pruned)
        }
    }

    /// What a stream reads when it (re)subscribes, in one statement: `eventsAndWatermark`'s, and the
    /// recipient's head.
    func eventsWatermarkAndHead(recipientID: String, afterPosition position: Int64, limit: Int) async throws -> (
        events: [ChatEventRecord], prunedThrough: Int64, highestPosition: Int64
    ) {
        try await postgres.read { connection in
            let rows = try await connection.execute(
                ChatStatements.EventsWatermarkAndHead.self, recipientID, position, limit, logger: Self.logger
            ).map { $0.makeRandomAccess() }
            let pruned = try rows.first?["pruned"].decode(Int64.self) ?? 0
            let head = try rows.first?["head"].decode(Int64.self) ?? 0
            let events = try rows.filter { try $0["position"].decode(Int64?.self) != nil }
            return (try await Self.events(events, of: recipientID, connection), pruned, head)
        }
    }

    /// Event rows (`ChatStatements.EventsAfter`'s columns) as records. A room-created event's room is read
    /// after the rows: a room purged in between takes every event of the batch in that room with it, as it
    /// would have had the purge come before the read (it deletes them).
    private static func events(
        _ rows: [PostgresRandomAccessRow], of recipientID: String, _ connection: PostgresConnection
    ) async throws -> [ChatEventRecord] {
        var created: [String: RoomRecord] = [:]
        var purged: Set<String> = []
        for row in rows {
            guard try row["kind"].decode(String.self) == "room" else { continue }
            let roomID = try row["room_id"].decode(String.self)
            if let room = try await room(roomID, connection) { created[roomID] = room } else { purged.insert(roomID) }
        }
        var events: [ChatEventRecord] = []
        events.reserveCapacity(rows.count)
        for row in rows {
            let roomID = try row["room_id"].decode(String.self)
            guard !purged.contains(roomID) else { continue }
            let body: ChatEventBody
            switch try row["kind"].decode(String.self) {
            case "message":
                guard try row["m_id"].decode(String?.self) != nil else { continue }
                body = .messageAdded(try messageRecord(row, prefix: "m_"))
            case "read":
                body = .readCursorMoved(
                    roomID: roomID, readerID: try row["reader_id"].decode(String.self),
                    readSeq: try row["read_seq"].decode(Int64.self),
                    readAtMilliseconds: try row["read_at_ms"].decode(Int64.self))
            case "closed":
                body = .roomClosed(roomID: roomID, closedAtMilliseconds: try row["read_at_ms"].decode(Int64.self))
            default:
                guard let room = created[roomID] else { continue }
                body = .roomCreated(room.asCreated)
            }
            events.append(
                ChatEventRecord(position: try row["position"].decode(Int64.self), recipientID: recipientID, body: body))
        }
        return events
    }

    // MARK: Deletion

    /// Locks the user's rooms (in id order) before deleting, so a send in one of them finishes first or
    /// finds the room gone; the receipt goes in the same transaction.
    func purgeUser(userID: String, delivery: Delivery?, now: Int64) async throws -> PurgedRooms {
        try await postgres.write { tx in
            var first = true
            if let delivery { first = try await ReceiptLedger.isFirstDelivery(in: tx, delivery, nowMilliseconds: now) }
            let rooms = try await Self.fetch(
                """
                SELECT id FROM chat_room
                WHERE id IN (SELECT room_id FROM chat_room_member WHERE user_id = \(userID))
                ORDER BY id FOR UPDATE
                """, tx.connection
            ).map { try $0["id"].decode(String.self) }
            try await tx.query("DELETE FROM chat_event WHERE recipient_id = \(userID)")
            try await tx.query("DELETE FROM chat_event_pruned WHERE recipient_id = \(userID)")
            // Their position counter goes too (it names them): nobody subscribes as a deleted user again,
            // and no event for them can come after this transaction, which holds their rooms' locks.
            try await tx.query("DELETE FROM chat_stream_head WHERE user_id = \(userID)")
            if !rooms.isEmpty {
                try await tx.query("DELETE FROM chat_event WHERE room_id = ANY(\(rooms))")
                // Members and messages go with the room (ON DELETE CASCADE).
                try await tx.query("DELETE FROM chat_room WHERE id = ANY(\(rooms))")
            }
            // Every replica ends the user's open streams (the revocation reaches the others' memory later).
            try await tx.query("SELECT pg_notify(\(Self.channel), \(ChatEventHub.endPayload(userID)))")
            return PurgedRooms(roomIDs: rooms, firstDelivery: first)
        }
    }

    // MARK: Appending

    /// Appends `draft` in `tx` (the room locked first), queuing its events in `events`.
    static func append(
        _ draft: MessageDraft, _ tx: PostgresTransaction, events: inout PendingChatEvents, pushes: OfflinePushes?
    ) async throws -> AppendedMessage {
        guard let room = try await room(draft.roomID, tx.connection, locking: true) else {
            throw ChatStoreError.roomNotFound
        }
        guard room.isMember(draft.senderID) else { throw ChatStoreError.notMember }
        // Under the room's lock, so an earlier send of this client id has committed or is not coming: the
        // unique constraint stays the last word.
        if let clientID = draft.clientMessageID,
            let original = try await fetch(
                """
                SELECT * FROM chat_message
                WHERE room_id = \(draft.roomID) AND sender_id = \(draft.senderID) AND client_message_id = \(clientID)
                """, tx.connection
            ).first
        {
            return AppendedMessage(message: try messageRecord(original), duplicate: true)
        }
        guard !room.isClosed else { throw ChatStoreError.roomClosed }
        let message = MessageRecord(
            id: draft.id, roomID: draft.roomID, seq: room.lastSeq + 1, senderID: draft.senderID,
            sentAtMilliseconds: draft.sentAtMilliseconds, clientMessageID: draft.clientMessageID, body: draft.body)
        try await insert(message, tx)
        try await tx.execute(ChatStatements.MoveRoomHead.self, message.seq, message.sentAtMilliseconds, room.id)
        for member in room.members {
            events.add(
                recipient: member, roomID: room.id, kind: "message", now: message.sentAtMilliseconds,
                body: .messageAdded(message))
        }
        if let pushes, case .text(let text) = draft.body {
            let recipients = draft.pushTo.filter { $0 != draft.senderID && room.isMember($0) }
            try await pushes.enqueue(message, text: text, to: recipients, app: room.app.rawValue, in: tx)
        }
        return AppendedMessage(message: message, duplicate: false)
    }

    private static func insert(_ message: MessageRecord, _ tx: PostgresTransaction) async throws {
        let columns = MessageColumns(message.body)
        try await tx.execute(
            ChatStatements.InsertMessage.self, message.roomID, message.seq, message.id, message.senderID,
            message.clientMessageID, message.sentAtMilliseconds, columns.kind, columns.text, columns.refID,
            columns.title,
            columns.image?.id, columns.image?.url ?? "", columns.image?.width ?? Int32(0),
            columns.image?.height ?? Int32(0),
            columns.startAt)
    }
}
