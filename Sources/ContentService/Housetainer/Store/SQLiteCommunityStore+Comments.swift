import GRDB
import RPCAccess
import ServiceRuntime

/// Comments on events and houses, and the notifications they and bookmarks cause.
extension SQLiteCommunityStore {
    func addComment(_ comment: CommentRecord, reader: CommunityReader) async throws -> CommentRecord {
        try await database.write { db in
            if let row = try Row.fetchOne(
                db, sql: "SELECT * FROM housetainer_comment WHERE app = ? AND writer_id = ? AND client_id = ?",
                arguments: [comment.app.rawValue, comment.writerID, comment.clientID])
            {
                return Self.comment(row)
            }
            guard let owner = try Self.owner(of: comment.target, reader: reader, db) else {
                throw CommunityStoreError.notFound
            }
            let (eventID, houseID) = Self.columns(comment.target)
            try db.execute(
                sql: """
                    INSERT INTO housetainer_comment
                        (id, app, event_id, house_id, writer_id, client_id, content, created_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    comment.id, comment.app.rawValue, eventID, houseID, comment.writerID, comment.clientID,
                    comment.content, comment.createdAtMilliseconds,
                ])
            let now = comment.createdAtMilliseconds
            guard let eventID else {
                try notify(
                    [owner], type: .houseCommented, actor: reader, target: comment.target, commentID: comment.id,
                    now: now, db)
                return comment
            }
            // The owner as owner (once, even when they bookmarked their own event), then each bookmarker.
            try notify(
                [owner], type: .eventCommented, actor: reader, target: comment.target, commentID: comment.id,
                now: now, db)
            let bookmarkers = try String.fetchAll(
                db, sql: "SELECT member_id FROM housetainer_bookmark WHERE event_id = ? AND member_id != ?",
                arguments: [eventID, owner])
            try notify(
                bookmarkers, type: .bookmarkedEventCommented, actor: reader, target: comment.target,
                commentID: comment.id, now: now, db)
            return comment
        }
    }

    func comments(on target: CommentTarget, reader: CommunityReader, after: PagePosition<Int64>?, limit: Int)
        async throws -> [CommentRecord]
    {
        try await database.read { db in
            guard try Self.owner(of: target, reader: reader, db) != nil else { throw CommunityStoreError.notFound }
            let (eventID, houseID) = Self.columns(target)
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT c.* FROM housetainer_comment c
                    WHERE \(eventID == nil ? "c.house_id = :house" : "c.event_id = :event")
                    AND NOT EXISTS (
                        SELECT 1 FROM housetainer_block b WHERE b.blocker_id = :me AND b.blocked_id = c.writer_id)
                    AND (:afterAt IS NULL OR (c.created_at_ms, c.id) < (:afterAt, :afterID))
                    ORDER BY c.created_at_ms DESC, c.id DESC LIMIT :limit
                    """,
                arguments: Self.arguments(
                    reader,
                    [
                        "event": eventID, "house": houseID, "afterAt": after?.key, "afterID": after?.id,
                        "limit": limit,
                    ])
            ).map(Self.comment)
        }
    }

    func deleteComment(id: String, reader: CommunityReader) async throws {
        try await database.write { db in
            guard
                let writer = try String.fetchOne(
                    db, sql: "SELECT writer_id FROM housetainer_comment WHERE id = ? AND app = ?",
                    arguments: [id, reader.app.rawValue])
            else { throw CommunityStoreError.notFound }
            guard writer == reader.id || reader.isAdmin else { throw CommunityStoreError.notOwner }
            // Its notifications go with it (ON DELETE CASCADE).
            try db.execute(sql: "DELETE FROM housetainer_comment WHERE id = ?", arguments: [id])
        }
    }

    func notifications(reader: CommunityReader, after: Int64?, limit: Int) async throws
        -> (notifications: [CommunityNotificationRecord], unread: Int)
    {
        try await database.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT n.* FROM housetainer_notification n
                    WHERE n.recipient_id = :me AND n.app = :app AND \(Self.notBlockedActor)
                    AND (:after IS NULL OR n.id < :after)
                    ORDER BY n.id DESC LIMIT :limit
                    """,
                arguments: Self.arguments(reader, ["after": after, "limit": limit]))
            return (
                rows.map { row in
                    CommunityNotificationRecord(
                        id: row["id"], type: CommunityNotificationType(rawValue: row["type"]) ?? .eventCommented,
                        actorID: row["actor_id"], target: Self.target(row), commentID: row["comment_id"],
                        read: row["read"], createdAtMilliseconds: row["created_at_ms"])
                }, try Self.unread(reader, db)
            )
        }
    }

    func markRead(upTo: Int64, reader: CommunityReader) async throws -> Int {
        try await database.write { db in
            try db.execute(
                sql: """
                    UPDATE housetainer_notification SET read = 1
                    WHERE recipient_id = ? AND app = ? AND id <= ? AND read = 0
                    """,
                arguments: [reader.id, reader.app.rawValue, upTo])
            return try Self.unread(reader, db)
        }
    }

    /// A notification `n` whose actor the reader did not block.
    private static let notBlockedActor = """
        NOT EXISTS (SELECT 1 FROM housetainer_block b WHERE b.blocker_id = :me AND b.blocked_id = n.actor_id)
        """

    private static func unread(_ reader: CommunityReader, _ db: Database) throws -> Int {
        try Int.fetchOne(
            db,
            sql: """
                SELECT count(*) FROM housetainer_notification n
                WHERE n.recipient_id = :me AND n.app = :app AND n.read = 0 AND \(notBlockedActor)
                """,
            arguments: arguments(reader)) ?? 0
    }

    /// The owner of the event or house the reader may see; nil when they may not.
    static func owner(of target: CommentTarget, reader: CommunityReader, _ db: Database) throws -> String? {
        switch target {
        case .event(let id): try event(id, reader: reader, db)?.ownerID
        case .house(let id): try house(id, reader: reader, db)?.ownerID
        }
    }

    static func comment(_ row: Row) -> CommentRecord {
        CommentRecord(
            id: row["id"], app: AppID(rawValue: row["app"]), target: target(row), writerID: row["writer_id"],
            clientID: row["client_id"], content: row["content"], createdAtMilliseconds: row["created_at_ms"])
    }
}
