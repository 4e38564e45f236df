import GRDB
import RPCAccess
import ServiceRuntime

/// `CommunityStore` on ContentService's SQLite database: events and bookmarks here, comments and
/// notifications in `+Comments`, blocks and the purge in `+Blocks`.
struct SQLiteCommunityStore: CommunityStore {
    let database: ServiceDatabase
    /// Pushes each notification to the recipient's devices (through AccountService), in the notification's
    /// transaction; nil in store tests.
    var push: CommunityPush? = nil

    /// What `reader` may see of an event `e`: its app; displayed, their own, or any for an admin; not of
    /// a member they blocked.
    static let visible = """
        e.app = :app AND (e.displayed = 1 OR e.owner_id = :me OR :admin)
        AND NOT EXISTS (SELECT 1 FROM housetainer_block b WHERE b.blocker_id = :me AND b.blocked_id = e.owner_id)
        """

    /// An event's columns with the reader's bookmark and the comment count.
    static let columns = """
        e.*, EXISTS (SELECT 1 FROM housetainer_bookmark bm WHERE bm.member_id = :me AND bm.event_id = e.id)
            AS bookmarked,
        (SELECT count(*) FROM housetainer_comment c WHERE c.event_id = e.id) AS comment_count
        """

    static func arguments(_ reader: CommunityReader, _ more: [String: (any DatabaseValueConvertible)?] = [:])
        -> StatementArguments
    {
        var values: [String: (any DatabaseValueConvertible)?] = [
            "me": reader.id, "app": reader.app.rawValue, "admin": reader.isAdmin,
        ]
        values.merge(more) { _, new in new }
        return StatementArguments(values)
    }

    func createEvent(_ event: EventRecord) async throws -> EventRecord {
        try await database.write { db in
            let reader = CommunityReader(id: event.ownerID, app: event.app, isAdmin: false)
            if let existing = try Self.events(
                where: "e.owner_id = :me AND e.client_id = :client", order: "e.id", reader: reader,
                ["client": event.clientID], db
            ).first {
                return existing
            }
            try db.execute(
                sql: """
                    INSERT INTO housetainer_event (id, app, owner_id, client_id, title, schedule_type, at_ms, detail,
                        link, displayed, created_at_ms, updated_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)
                    """,
                arguments: [
                    event.id, event.app.rawValue, event.ownerID, event.clientID, event.title, event.scheduleType,
                    event.atMilliseconds, event.detail, event.link, event.createdAtMilliseconds,
                    event.updatedAtMilliseconds,
                ])
            try CommunityImageList.events.set(event.imageIDs, of: event.id, db)
            var stored = event
            stored.displayed = false
            return stored
        }
    }

    func event(id: String, reader: CommunityReader) async throws -> EventRecord? {
        try await database.read { db in try Self.event(id, reader: reader, db) }
    }

    func updateEvent(id: String, _ fields: EventFieldsRecord, reader: CommunityReader, now: Int64) async throws {
        try await database.write { db in
            try Self.owned(id, reader: reader, db)
            try db.execute(
                sql: """
                    UPDATE housetainer_event SET title = ?, schedule_type = ?, at_ms = ?, detail = ?, link = ?,
                        updated_at_ms = ?
                    WHERE id = ?
                    """,
                arguments: [
                    fields.title, fields.scheduleType, fields.atMilliseconds, fields.detail, fields.link, now, id,
                ])
            try CommunityImageList.events.set(fields.imageIDs, of: id, db)
        }
    }

    func deleteEvent(id: String, reader: CommunityReader) async throws {
        try await database.write { db in
            try Self.owned(id, reader: reader, db)
            try db.execute(sql: "DELETE FROM housetainer_event WHERE id = ?", arguments: [id])
        }
    }

    func setDisplay(eventID: String, displayed: Bool, app: AppID, now: Int64) async throws {
        try await database.write { db in
            try db.execute(
                sql: "UPDATE housetainer_event SET displayed = ? WHERE id = ? AND app = ?",
                arguments: [displayed, eventID, app.rawValue])
            guard db.changesCount == 1 else { throw CommunityStoreError.notFound }
        }
    }

    func events(
        ongoing: Bool, now: Int64, reader: CommunityReader, after: PagePosition<Int64>?, limit: Int
    ) async throws -> EventPage {
        try await database.read { db in
            let condition =
                ongoing
                ? "e.at_ms >= :now AND (:afterAt IS NULL OR (e.at_ms, e.id) > (:afterAt, :afterID))"
                : "e.at_ms < :now AND (:afterAt IS NULL OR (e.at_ms, e.id) < (:afterAt, :afterID))"
            let events = try Self.events(
                where: condition, order: ongoing ? "e.at_ms, e.id" : "e.at_ms DESC, e.id DESC", reader: reader,
                ["now": now, "afterAt": after?.key, "afterID": after?.id, "limit": limit], limit: true, db)
            return EventPage(events: events, keys: events.map(\.atMilliseconds))
        }
    }

    func memberEvents(memberID: String, reader: CommunityReader, after: PagePosition<Int64>?, limit: Int)
        async throws -> EventPage
    {
        try await database.read { db in
            let events = try Self.events(
                where: """
                    e.owner_id = :member
                    AND (:afterAt IS NULL OR (e.created_at_ms, e.id) < (:afterAt, :afterID))
                    """,
                order: "e.created_at_ms DESC, e.id DESC", reader: reader,
                ["member": memberID, "afterAt": after?.key, "afterID": after?.id, "limit": limit], limit: true, db)
            return EventPage(events: events, keys: events.map(\.createdAtMilliseconds))
        }
    }

    func bookmarkedEvents(reader: CommunityReader, after: PagePosition<Int64>?, limit: Int) async throws -> EventPage {
        try await database.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Self.columns), mine.created_at_ms AS bookmarked_at_ms
                    FROM housetainer_bookmark mine JOIN housetainer_event e ON e.id = mine.event_id
                    WHERE mine.member_id = :me AND \(Self.visible)
                    AND (:afterAt IS NULL OR (mine.created_at_ms, e.id) < (:afterAt, :afterID))
                    ORDER BY mine.created_at_ms DESC, e.id DESC LIMIT :limit
                    """,
                arguments: Self.arguments(reader, ["afterAt": after?.key, "afterID": after?.id, "limit": limit]))
            let events = try Self.records(rows, db)
            return EventPage(events: events, keys: rows.map { $0["bookmarked_at_ms"] })
        }
    }

    func bookmark(eventID: String, reader: CommunityReader, now: Int64) async throws -> Bool {
        try await database.write { db in
            guard let event = try Self.event(eventID, reader: reader, db) else { throw CommunityStoreError.notFound }
            try db.execute(
                sql: "INSERT OR IGNORE INTO housetainer_bookmark (member_id, event_id, created_at_ms) VALUES (?, ?, ?)",
                arguments: [reader.id, eventID, now])
            guard db.changesCount == 1 else { return false }
            try notify(
                [event.ownerID], type: .eventBookmarked, actor: reader, target: .event(eventID), commentID: nil,
                now: now, db)
            return true
        }
    }

    func unbookmark(eventID: String, reader: CommunityReader) async throws -> Bool {
        try await database.write { db in
            guard try Self.event(eventID, reader: reader, db) != nil else { throw CommunityStoreError.notFound }
            try db.execute(
                sql: "DELETE FROM housetainer_bookmark WHERE member_id = ? AND event_id = ?",
                arguments: [reader.id, eventID])
            return db.changesCount == 1
        }
    }

    // MARK: Reading events

    static func event(_ id: String, reader: CommunityReader, _ db: Database) throws -> EventRecord? {
        try events(where: "e.id = :id", order: "e.id", reader: reader, ["id": id], db).first
    }

    /// The reader's visible events matching `condition`, in `order` (at most `:limit` when `limit`).
    static func events(
        where condition: String, order: String, reader: CommunityReader,
        _ more: [String: (any DatabaseValueConvertible)?], limit: Bool = false, _ db: Database
    ) throws -> [EventRecord] {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT \(columns) FROM housetainer_event e
                WHERE \(visible) AND \(condition) ORDER BY \(order)\(limit ? " LIMIT :limit" : "")
                """,
            arguments: arguments(reader, more))
        return try records(rows, db)
    }

    /// Event rows with their images, in order.
    static func records(_ rows: [Row], _ db: Database) throws -> [EventRecord] {
        let images = try CommunityImageList.events.images(of: rows.map { $0["id"] }, db)
        return rows.map { row in
            EventRecord(
                id: row["id"], app: AppID(rawValue: row["app"]), ownerID: row["owner_id"], clientID: row["client_id"],
                title: row["title"], scheduleType: row["schedule_type"], atMilliseconds: row["at_ms"],
                detail: row["detail"], link: row["link"], imageIDs: images[row["id"]] ?? [],
                displayed: row["displayed"], createdAtMilliseconds: row["created_at_ms"],
                updatedAtMilliseconds: row["updated_at_ms"], bookmarked: row["bookmarked"],
                commentCount: row["comment_count"])
        }
    }

    /// Throws unless `reader` owns the event: `notFound` when they cannot see it, `notOwner` when they can.
    private static func owned(_ id: String, reader: CommunityReader, _ db: Database) throws {
        guard let event = try event(id, reader: reader, db) else { throw CommunityStoreError.notFound }
        guard event.ownerID == reader.id else { throw CommunityStoreError.notOwner }
    }

    /// One notification per recipient of `recipients` (the first type wins for a member listed twice),
    /// never to the actor, nor to anyone who blocked the actor.
    func notify(
        _ recipients: [String], type: CommunityNotificationType, actor: CommunityReader, target: CommentTarget,
        commentID: String?, now: Int64, _ db: Database
    ) throws {
        let (eventID, houseID) = Self.columns(target)
        for recipient in recipients where recipient != actor.id {
            try db.execute(
                sql: """
                    INSERT INTO housetainer_notification
                        (app, recipient_id, actor_id, type, event_id, house_id, comment_id, created_at_ms)
                    SELECT ?, ?, ?, ?, ?, ?, ?, ?
                    WHERE NOT EXISTS (SELECT 1 FROM housetainer_block WHERE blocker_id = ? AND blocked_id = ?)
                    """,
                arguments: [
                    actor.app.rawValue, recipient, actor.id, type.rawValue, eventID, houseID, commentID, now,
                    recipient, actor.id,
                ])
            guard db.changesCount == 1 else { continue }
            try push?.send(
                type, notificationID: db.lastInsertedRowID, to: recipient, actor: actor, target: target,
                commentID: commentID, in: db)
        }
    }

    /// The `event_id` and `house_id` columns of a target.
    static func columns(_ target: CommentTarget) -> (event: String?, house: String?) {
        switch target {
        case .event(let id): (id, nil)
        case .house(let id): (nil, id)
        }
    }

    /// A target from its row's `event_id` and `house_id`.
    static func target(_ row: Row) -> CommentTarget {
        if let house: String = row["house_id"] { return .house(house) }
        return .event(row["event_id"] ?? "")
    }
}
