import PostgresNIO
import RPCAccess
import ServiceRuntime

/// How the PostgreSQL store reads events and houses as `reader` sees them. Every list query starts
/// `FROM \(reader: reader) CROSS JOIN …`: the reader is a one-row relation `r` (me, app, admin), so the
/// visibility conditions are fixed text written once, as SQLite's named arguments are.
extension PostgresCommunityStore {
    /// What `r` may see of an event `e`: its app; displayed, their own, or any for an admin; not of a
    /// member they blocked.
    static let visible = """
        e.app = r.app AND (e.displayed OR e.owner_id = r.me OR r.admin)
        AND NOT EXISTS (SELECT 1 FROM housetainer_block b WHERE b.blocker_id = r.me AND b.blocked_id = e.owner_id)
        """

    /// An event's columns with the reader's bookmark and the comment count.
    static let eventColumns = """
        e.*, EXISTS (SELECT 1 FROM housetainer_bookmark bm WHERE bm.member_id = r.me AND bm.event_id = e.id)
            AS bookmarked,
        (SELECT count(*) FROM housetainer_comment c WHERE c.event_id = e.id) AS comment_count
        """

    /// What `r` may see of a house `h`: as for events.
    static let visibleHouse = """
        h.app = r.app AND (h.displayed OR h.owner_id = r.me OR r.admin)
        AND NOT EXISTS (SELECT 1 FROM housetainer_block b WHERE b.blocker_id = r.me AND b.blocked_id = h.owner_id)
        """

    static let houseColumns = """
        h.*, (SELECT count(*) FROM housetainer_comment c WHERE c.house_id = h.id) AS comment_count
        """

    static func event(_ id: String, reader: CommunityReader, _ tx: PostgresTransaction) async throws -> EventRecord? {
        try await events(
            """
            SELECT \(unescaped: eventColumns) FROM \(reader: reader) CROSS JOIN housetainer_event e
            WHERE \(unescaped: visible) AND e.id = \(id)
            """, tx
        ).first
    }

    static func house(_ id: String, reader: CommunityReader, _ tx: PostgresTransaction) async throws -> HouseRecord? {
        try await houses(
            """
            SELECT \(unescaped: houseColumns) FROM \(reader: reader) CROSS JOIN housetainer_house h
            WHERE \(unescaped: visibleHouse) AND h.id = \(id)
            """, tx
        ).first
    }

    /// The events `query` selects (`eventColumns`), with their images, in order.
    static func events(_ query: PostgresQuery, _ tx: PostgresTransaction) async throws -> [EventRecord] {
        try await records(tx.query(query), tx)
    }

    static func records(_ rows: [PostgresRow], _ tx: PostgresTransaction) async throws -> [EventRecord] {
        let rows = rows.map { $0.makeRandomAccess() }
        let images = try await CommunityImageList.events.images(of: rows.map { try $0["id"].decode(String.self) }, tx)
        return try rows.map { row in
            let id = try row["id"].decode(String.self)
            return EventRecord(
                id: id, app: AppID(rawValue: try row["app"].decode(String.self)),
                ownerID: try row["owner_id"].decode(String.self), clientID: try row["client_id"].decode(String.self),
                title: try row["title"].decode(String.self), scheduleType: try row["schedule_type"].decode(Int.self),
                atMilliseconds: try row["at_ms"].decode(Int64.self), detail: try row["detail"].decode(String.self),
                link: try row["link"].decode(String.self), imageIDs: images[id] ?? [],
                displayed: try row["displayed"].decode(Bool.self),
                createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self),
                updatedAtMilliseconds: try row["updated_at_ms"].decode(Int64.self),
                bookmarked: try row["bookmarked"].decode(Bool.self),
                commentCount: try row["comment_count"].decode(Int.self))
        }
    }

    /// The houses `query` selects (`houseColumns`), with their images, in order.
    static func houses(_ query: PostgresQuery, _ tx: PostgresTransaction) async throws -> [HouseRecord] {
        let rows = try await tx.query(query).map { $0.makeRandomAccess() }
        let images = try await CommunityImageList.houses.images(of: rows.map { try $0["id"].decode(String.self) }, tx)
        return try rows.map { row in
            let id = try row["id"].decode(String.self)
            let ownerID = try row["owner_id"].decode(String.self)
            return HouseRecord(
                id: id, app: AppID(rawValue: try row["app"].decode(String.self)), ownerID: ownerID,
                creatorID: try row["creator_id"].decode(String.self),
                clientID: try row["client_id"].decode(String.self),
                fields: HouseFieldsRecord(
                    ownerID: ownerID, name: try row["name"].decode(String.self),
                    title: try row["title"].decode(String.self), content: try row["content"].decode(String.self),
                    category: try row["category"].decode(Int.self), imageIDs: images[id] ?? [],
                    coverIndex: try row["cover_index"].decode(Int.self),
                    domestic: try row["domestic"].decode(Bool.self),
                    location: try row["location"].decode(String.self),
                    detailedLocation: try row["detailed_location"].decode(String.self)),
                displayed: try row["displayed"].decode(Bool.self),
                createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self),
                updatedAtMilliseconds: try row["updated_at_ms"].decode(Int64.self),
                commentCount: try row["comment_count"].decode(Int.self))
        }
    }

    /// A row of `housetainer_comment` (`*`).
    static func comment(_ row: PostgresRow) throws -> CommentRecord {
        let row = row.makeRandomAccess()
        return CommentRecord(
            id: try row["id"].decode(String.self), app: AppID(rawValue: try row["app"].decode(String.self)),
            target: try target(row), writerID: try row["writer_id"].decode(String.self),
            clientID: try row["client_id"].decode(String.self), content: try row["content"].decode(String.self),
            createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self))
    }

    /// A target from its row's `event_id` and `house_id`.
    static func target(_ row: PostgresRandomAccessRow) throws -> CommentTarget {
        if let house = try row["house_id"].decode(String?.self) { return .house(house) }
        return .event(try row["event_id"].decode(String?.self) ?? "")
    }
}

extension PostgresQuery.StringInterpolation {
    /// The reader as a one-row relation `r` (me, app, admin), three binds.
    mutating func appendInterpolation(reader: CommunityReader) {
        appendLiteral("(SELECT ")
        appendInterpolation(reader.id)
        appendLiteral("::text AS me, ")
        appendInterpolation(reader.app.rawValue)
        appendLiteral("::text AS app, ")
        appendInterpolation(reader.isAdmin)
        appendLiteral("::boolean AS admin) r")
    }
}
