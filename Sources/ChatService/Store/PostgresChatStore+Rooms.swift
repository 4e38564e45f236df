import PostgresNIO
import RPCAccess
import ServiceRuntime

/// Rooms on PostgreSQL: opening (one open room of a kind per pair, by the partial unique index), rooms of
/// any kind, closing, the member's room list, the rooms quota and the pruning of old events.
extension PostgresChatStore {
    /// Of two opens of one pair on two replicas, the second's insert waits for the first's commit on the
    /// unique index, then does nothing and reads the first's room. The quota counts under a lock on the
    /// customer, so concurrent opens through several replicas cannot all see room for one more.
    func openRoom(
        kind: String, customerID: String, designerID: String, newRoomID: String, now: Int64,
        postShare: MessageDraft?, quota: Quota?
    ) async throws -> OpenedRoom {
        try await postgres.write { [sink] tx in
            let key = RoomOpenKey.pair(customerID, designerID)
            if let quota {
                try await tx.query("SELECT pg_advisory_xact_lock(hashtextextended(\("chat-rooms:" + customerID), 0))")
                try await Self.checkRoomQuota(quota, kind: kind, key: key, customerID: customerID, now: now, tx)
            }
            var created = false
            var found: PostgresRandomAccessRow?
            // The open room, locked: a close committing meanwhile takes it out of the WHERE (the row is
            // re-checked once its lock is free), and the next round opens a new one, as SQLite's single
            // writer would have.
            for _ in 0..<3 where found == nil {
                created = try await !tx.query(
                    """
                    INSERT INTO chat_room (id, kind, app, open_key, opened_by, created_at_ms, last_activity_at_ms)
                    VALUES (\(newRoomID), \(kind), \(RoomRecord.app(ofKind: kind).rawValue), \(key), \(customerID),
                        \(now), \(now))
                    ON CONFLICT (kind, open_key) WHERE closed_at_ms IS NULL DO NOTHING RETURNING id
                    """
                ).isEmpty
                found = try await Self.fetch(
                    """
                    SELECT * FROM chat_room WHERE kind = \(kind) AND open_key = \(key) AND closed_at_ms IS NULL
                    FOR UPDATE
                    """, tx.connection
                ).first
            }
            guard let row = found else { throw ChatStoreError.roomNotFound }
            var events = PendingChatEvents()
            if created {
                let members = [
                    RoomMemberRecord(userID: customerID, role: RoomRole.customer),
                    RoomMemberRecord(userID: designerID, role: RoomRole.designer),
                ]
                try await Self.addMembers(members, roomID: newRoomID, now: now, tx, events: &events)
            }
            var room = try await Self.roomRecord(row, tx.connection)
            var share: MessageRecord?
            if var draft = postShare {
                draft.roomID = room.id
                let appended = try await Self.append(draft, tx, events: &events, pushes: nil)
                share = appended.message
                room.lastSeq = max(room.lastSeq, appended.message.seq)
                if !appended.duplicate { room.lastActivityAtMilliseconds = appended.message.sentAtMilliseconds }
            }
            let committed = try await events.commit(tx)
            tx.afterCommit { if !committed.isEmpty { sink(committed) } }
            return OpenedRoom(room: room, created: created, postShare: share)
        }
    }

    func createRoom(id: String, kind: String, members: [RoomMemberRecord], now: Int64) async throws -> RoomRecord {
        precondition(!members.isEmpty, "a room has members")
        return try await postgres.write { [sink] tx in
            try await tx.query(
                """
                INSERT INTO chat_room (id, kind, app, created_at_ms, last_activity_at_ms)
                VALUES (\(id), \(kind), \(RoomRecord.app(ofKind: kind).rawValue), \(now), \(now))
                """)
            var events = PendingChatEvents()
            let room = try await Self.addMembers(members, roomID: id, now: now, tx, events: &events)
            let committed = try await events.commit(tx)
            tx.afterCommit { sink(committed) }
            return room
        }
    }

    func closeRoom(id: String, now: Int64) async throws -> RoomRecord {
        try await postgres.write { [sink] tx in
            // Leaves the open key's place free: the pair's next OpenRoom makes a new room.
            let closed = try await !tx.query(
                "UPDATE chat_room SET closed_at_ms = \(now) WHERE id = \(id) AND closed_at_ms IS NULL RETURNING id"
            ).isEmpty
            guard let room = try await Self.room(id, tx.connection) else { throw ChatStoreError.roomNotFound }
            // The first closing tells each member (a room-closed event); a repeat tells no one.
            if closed {
                var events = PendingChatEvents()
                for member in room.members {
                    events.add(
                        recipient: member, roomID: id, kind: "closed", now: now,
                        body: .roomClosed(roomID: id, closedAtMilliseconds: now))
                }
                let committed = try await events.commit(tx)
                tx.afterCommit { sink(committed) }
            }
            return room
        }
    }

    func room(id: String) async throws -> RoomRecord? {
        try await postgres.snapshot { tx in try await Self.room(id, tx.connection) }
    }

    /// One snapshot: the rooms, their last messages, the unread counts and the head agree. Ordered by the
    /// member's own activity position.
    func rooms(userID: String, app: AppID, afterActivity: Int64?, limit: Int) async throws -> RoomListRecord {
        try await postgres.snapshot { tx in
            let rows = try await Self.fetch(
                """
                SELECT r.*, me.read_seq AS my_read_seq, me.activity_position AS my_activity_position,
                    (SELECT COALESCE(MAX(other.read_seq), 0) FROM chat_room_member other
                     WHERE other.room_id = r.id AND other.user_id <> me.user_id)::bigint AS other_read_seq,
                    (SELECT COUNT(*) FROM chat_message m
                     WHERE m.room_id = r.id AND m.seq > me.read_seq AND m.sender_id <> me.user_id) AS unread
                FROM chat_room_member me
                JOIN chat_room r ON r.id = me.room_id
                WHERE me.user_id = \(userID) AND r.app = \(app.rawValue)
                    AND me.activity_position < \(afterActivity ?? Int64.max)
                ORDER BY me.activity_position DESC
                LIMIT \(limit)
                """, tx.connection)
            var rooms: [RoomSummaryRecord] = []
            for row in rows {
                let room = try await Self.roomRecord(row, tx.connection)
                let last =
                    room.lastSeq == 0
                    ? nil
                    : try await Self.fetch(
                        "SELECT * FROM chat_message WHERE room_id = \(room.id) AND seq = \(room.lastSeq)", tx.connection
                    ).first.map { try Self.messageRecord($0) }
                rooms.append(
                    RoomSummaryRecord(
                        room: room, lastMessage: last, unreadCount: try row["unread"].decode(Int64.self),
                        myReadSeq: try row["my_read_seq"].decode(Int64.self),
                        otherReadSeq: try row["other_read_seq"].decode(Int64.self),
                        activityPosition: try row["my_activity_position"].decode(Int64.self)))
            }
            return RoomListRecord(
                rooms: rooms, totalUnread: try await Self.totalUnread(userID, tx.connection),
                headPosition: try await Self.head(userID, tx.connection))
        }
    }

    /// Adds a new room's members (in their order) and queues a room-created event for each; answers the
    /// room as created.
    @discardableResult
    static func addMembers(
        _ members: [RoomMemberRecord], roomID: String, now: Int64, _ tx: PostgresTransaction,
        events: inout PendingChatEvents
    ) async throws -> RoomRecord {
        for (ordinal, member) in members.enumerated() {
            try await tx.query(
                """
                INSERT INTO chat_room_member (room_id, user_id, role, ordinal)
                VALUES (\(roomID), \(member.userID), \(member.role), \(ordinal))
                """)
        }
        guard let room = try await room(roomID, tx.connection) else { throw ChatStoreError.roomNotFound }
        for member in room.members {
            events.add(recipient: member, roomID: roomID, kind: "room", now: now, body: .roomCreated(room))
        }
        return room
    }

    /// Only a room that does not exist yet counts: the customer's open room of the kind with the designer
    /// is answered whatever the quota.
    static func checkRoomQuota(
        _ quota: Quota, kind: String, key: String, customerID: String, now: Int64, _ tx: PostgresTransaction
    ) async throws {
        let exists = try await !tx.query(
            "SELECT 1 FROM chat_room WHERE kind = \(kind) AND open_key = \(key) AND closed_at_ms IS NULL"
        ).isEmpty
        guard !exists else { return }
        let today =
            try await tx.query(
                "SELECT COUNT(*) FROM chat_room WHERE opened_by = \(customerID) AND created_at_ms >= \(QuotaDay.start(of: now))"
            ).first?.decode(Int64.self) ?? 0
        try quota.check(used: today)
    }

    // MARK: Pruning

    func prunedThrough(recipientID: String) async throws -> Int64 {
        try await postgres.read { connection in
            try await connection.execute(ChatStatements.PrunedThrough.self, recipientID, logger: Self.logger).first?
                .makeRandomAccess()["through_position"].decode(Int64.self) ?? 0
        }
    }

    /// Events deleted per transaction: each batch is short, well inside `--database-timeout`.
    static let pruningBatch = 5_000

    /// The events created before `cutoff`, in batches of `pruningBatch` (oldest first, by the age index),
    /// each with its recipients' watermarks (the highest position it removed) in the same statement. One
    /// replica prunes at a time (a try-lock: the others skip this round). Unlike SQLite's, it does not stop
    /// at a recipient's first newer event (replicas' clocks may differ, and finding it costs a scan per
    /// recipient); a client is never misled by that: every removed position is at most its recipient's
    /// watermark, so a resume from below it is refused and one from above it misses nothing.
    func pruneEvents(createdBefore cutoff: Int64) async throws -> Int {
        var total = 0
        while true {
            let removed = try await postgres.write { tx -> Int? in
                let mine =
                    try await tx.query(
                        "SELECT pg_try_advisory_xact_lock(hashtextextended('chat-event-pruning', 0))"
                    ).first?.decode(Bool.self) ?? false
                guard mine else { return nil }
                return try await tx.query(
                    """
                    WITH doomed AS (
                        DELETE FROM chat_event e USING (
                            SELECT recipient_id, position FROM chat_event WHERE created_at_ms < \(cutoff)
                            ORDER BY created_at_ms LIMIT \(Self.pruningBatch)
                        ) d
                        WHERE e.recipient_id = d.recipient_id AND e.position = d.position
                        RETURNING e.recipient_id, e.position
                    ), marks AS (
                        INSERT INTO chat_event_pruned (recipient_id, through_position)
                        SELECT recipient_id, MAX(position) FROM doomed GROUP BY recipient_id
                        ON CONFLICT (recipient_id) DO UPDATE
                            SET through_position = GREATEST(chat_event_pruned.through_position, excluded.through_position)
                    )
                    SELECT COUNT(*) FROM doomed
                    """
                ).first.map { Int(try $0.decode(Int64.self)) } ?? 0
            }
            guard let removed else { return total }
            total += removed
            if removed < Self.pruningBatch { return total }
        }
    }
}
