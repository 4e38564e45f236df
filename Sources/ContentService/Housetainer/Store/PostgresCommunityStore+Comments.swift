import PostgresNIO
import RPCAccess
import ServiceRuntime

/// Comments on events and houses, and the notifications they and bookmarks cause.
extension PostgresCommunityStore {
    func addComment(_ comment: CommentRecord, reader: CommunityReader) async throws -> CommentRecord {
        try await postgres.write { tx in
            if let existing = try await Self.comment(clientID: comment.clientID, of: comment, tx) { return existing }
            // The target is held (`FOR KEY SHARE`) from the check on: a deletion waits for this comment.
            guard try await Self.lock(comment.target, tx),
                let owner = try await Self.owner(of: comment.target, reader: reader, tx)
            else { throw CommunityStoreError.notFound }
            let (eventID, houseID) = SQLiteCommunityStore.columns(comment.target)
            // The same comment retried on another replica at once waits for this commit, then inserts
            // nothing and answers the comment stored there, its notifications already sent.
            guard
                try await !tx.query(
                    """
                    INSERT INTO housetainer_comment
                        (id, app, event_id, house_id, writer_id, client_id, content, created_at_ms)
                    VALUES (\(comment.id), \(comment.app.rawValue), \(eventID), \(houseID), \(comment.writerID),
                        \(comment.clientID), \(comment.content), \(comment.createdAtMilliseconds))
                    ON CONFLICT ON CONSTRAINT housetainer_comment_client DO NOTHING
                    RETURNING 1
                    """
                ).isEmpty
            else {
                guard let existing = try await Self.comment(clientID: comment.clientID, of: comment, tx) else {
                    throw CommunityStoreError.notFound
                }
                return existing
            }
            let now = comment.createdAtMilliseconds
            guard let eventID else {
                try await notify(
                    [owner], type: .houseCommented, actor: reader, target: comment.target, commentID: comment.id,
                    now: now, tx)
                return comment
            }
            // The owner as owner (once, even when they bookmarked their own event), then each bookmarker.
            try await notify(
                [owner], type: .eventCommented, actor: reader, target: comment.target, commentID: comment.id,
                now: now, tx)
            let bookmarkers = try await tx.query(
                """
                SELECT member_id FROM housetainer_bookmark WHERE event_id = \(eventID) AND member_id <> \(owner)
                ORDER BY created_at_ms, member_id
                """
            ).map { try $0.decode(String.self) }
            try await notify(
                bookmarkers, type: .bookmarkedEventCommented, actor: reader, target: comment.target,
                commentID: comment.id, now: now, tx)
            return comment
        }
    }

    func comments(on target: CommentTarget, reader: CommunityReader, after: PagePosition<Int64>?, limit: Int)
        async throws -> [CommentRecord]
    {
        try await postgres.snapshot { tx in
            guard try await Self.owner(of: target, reader: reader, tx) != nil else {
                throw CommunityStoreError.notFound
            }
            let (column, id) = Self.column(target)
            return try await tx.query(
                """
                SELECT c.* FROM housetainer_comment c
                WHERE c.\(unescaped: column) = \(id)
                    AND NOT EXISTS (
                        SELECT 1 FROM housetainer_block b WHERE b.blocker_id = \(reader.id) AND b.blocked_id = c.writer_id)
                    AND (\(after?.key)::bigint IS NULL OR (c.created_at_ms, c.id) < (\(after?.key), \(after?.id)))
                ORDER BY c.created_at_ms DESC, c.id DESC LIMIT \(limit)
                """
            ).map(Self.comment)
        }
    }

    func deleteComment(id: String, reader: CommunityReader) async throws {
        try await postgres.write { tx in
            guard
                let writer = try await tx.query(
                    "SELECT writer_id FROM housetainer_comment WHERE id = \(id) AND app = \(reader.app.rawValue) FOR UPDATE"
                ).first?.decode(String.self)
            else { throw CommunityStoreError.notFound }
            guard writer == reader.id || reader.isAdmin else { throw CommunityStoreError.notOwner }
            // Its notifications go with it (ON DELETE CASCADE).
            try await tx.query("DELETE FROM housetainer_comment WHERE id = \(id)")
        }
    }

    func notifications(reader: CommunityReader, after: Int64?, limit: Int) async throws
        -> (notifications: [CommunityNotificationRecord], unread: Int)
    {
        try await postgres.snapshot { tx in
            let rows = try await tx.query(
                """
                SELECT n.* FROM \(reader: reader) CROSS JOIN housetainer_notification n
                WHERE n.recipient_id = r.me AND n.app = r.app AND \(unescaped: Self.notBlockedActor)
                    AND (\(after)::bigint IS NULL OR n.id < \(after))
                ORDER BY n.id DESC LIMIT \(limit)
                """)
            let notifications = try rows.map { row in
                let row = row.makeRandomAccess()
                return CommunityNotificationRecord(
                    id: try row["id"].decode(Int64.self),
                    type: CommunityNotificationType(rawValue: try row["type"].decode(Int.self)) ?? .eventCommented,
                    actorID: try row["actor_id"].decode(String.self), target: try Self.target(row),
                    commentID: try row["comment_id"].decode(String?.self), read: try row["read"].decode(Bool.self),
                    createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self))
            }
            return (notifications, try await Self.unread(reader, tx))
        }
    }

    func markRead(upTo: Int64, reader: CommunityReader) async throws -> Int {
        try await postgres.write { tx in
            try await tx.query(
                """
                UPDATE housetainer_notification SET read = true
                WHERE recipient_id = \(reader.id) AND app = \(reader.app.rawValue) AND id <= \(upTo) AND NOT read
                """)
            return try await Self.unread(reader, tx)
        }
    }

    // MARK: Helpers

    /// A notification `n` whose actor `r` did not block.
    private static let notBlockedActor = """
        NOT EXISTS (SELECT 1 FROM housetainer_block b WHERE b.blocker_id = r.me AND b.blocked_id = n.actor_id)
        """

    private static func unread(_ reader: CommunityReader, _ tx: PostgresTransaction) async throws -> Int {
        try await tx.query(
            """
            SELECT count(*) FROM \(reader: reader) CROSS JOIN housetainer_notification n
            WHERE n.recipient_id = r.me AND n.app = r.app AND NOT n.read AND \(unescaped: notBlockedActor)
            """
        ).first?.decode(Int.self) ?? 0
    }

    /// The writer's comment with the client id `clientID` (in `comment`'s app).
    private static func comment(clientID: String, of comment: CommentRecord, _ tx: PostgresTransaction) async throws
        -> CommentRecord?
    {
        try await tx.query(
            """
            SELECT * FROM housetainer_comment
            WHERE app = \(comment.app.rawValue) AND writer_id = \(comment.writerID) AND client_id = \(clientID)
            """
        ).first.map(Self.comment)
    }

    /// The owner of the event or house the reader may see; nil when they may not.
    static func owner(of target: CommentTarget, reader: CommunityReader, _ tx: PostgresTransaction) async throws
        -> String?
    {
        switch target {
        case .event(let id): try await event(id, reader: reader, tx)?.ownerID
        case .house(let id): try await house(id, reader: reader, tx)?.ownerID
        }
    }

    /// Holds the target's row (`FOR KEY SHARE`) until the transaction ends: false when there is none.
    private static func lock(_ target: CommentTarget, _ tx: PostgresTransaction) async throws -> Bool {
        switch target {
        case .event(let id): try await lockEvent(id, .keyShare, tx)
        case .house(let id):
            try await !tx.query("SELECT 1 FROM housetainer_house WHERE id = \(id) FOR KEY SHARE").isEmpty
        }
    }

    /// The comment column naming `target`, and its id.
    private static func column(_ target: CommentTarget) -> (column: String, id: String) {
        switch target {
        case .event(let id): ("event_id", id)
        case .house(let id): ("house_id", id)
        }
    }
}
