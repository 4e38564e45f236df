import Logging
import PostgresNIO
import RPCAccess
import ServiceRuntime

/// `CommunityStore` on PostgreSQL, for several replicas of ContentService on one database: events and
/// bookmarks here; comments and notifications in `+Comments`, houses and picks in `+Houses`, blocks and
/// the purge in `+Blocks`, reading rows in `+Rows`.
///
/// What SQLite's single writer decided alone is held here by the database, at READ COMMITTED: a retried
/// creation (event, house, comment) and a second bookmark or block meet a unique constraint through
/// `ON CONFLICT DO NOTHING`, and the retry answers what the first stored; a write that checks an event
/// and then changes what hangs on it first locks the event's row (`FOR UPDATE` to change or delete it,
/// `FOR KEY SHARE` to hang a bookmark or comment on it), so a deletion committing meanwhile makes it
/// answer `notFound` rather than fail a foreign key; replacing an app's picks runs under the app's
/// advisory lock. Notifications and their push jobs are written by the change's own transaction.
struct PostgresCommunityStore: CommunityStore {
    static let logger = Logger(label: "yedi.content.postgres.community")

    let postgres: ServicePostgres
    /// Pushes each notification to the recipient's devices (through AccountService), in the notification's
    /// transaction; nil in store tests.
    var push: CommunityPush? = nil

    func createEvent(_ event: EventRecord) async throws -> EventRecord {
        try await postgres.write { tx in
            let reader = CommunityReader(id: event.ownerID, app: event.app, isAdmin: false)
            if let existing = try await Self.event(clientID: event.clientID, reader: reader, tx) { return existing }
            // A retry on another replica at the same moment waits for this one's commit, then inserts
            // nothing and answers the event stored here.
            guard
                try await !tx.query(
                    """
                    INSERT INTO housetainer_event (id, app, owner_id, client_id, title, schedule_type, at_ms, detail,
                        link, displayed, created_at_ms, updated_at_ms)
                    VALUES (\(event.id), \(event.app.rawValue), \(event.ownerID), \(event.clientID), \(event.title),
                        \(event.scheduleType), \(event.atMilliseconds), \(event.detail), \(event.link), false,
                        \(event.createdAtMilliseconds), \(event.updatedAtMilliseconds))
                    ON CONFLICT ON CONSTRAINT housetainer_event_client DO NOTHING
                    RETURNING 1
                    """
                ).isEmpty
            else {
                guard let existing = try await Self.event(clientID: event.clientID, reader: reader, tx) else {
                    throw CommunityStoreError.notFound
                }
                return existing
            }
            try await CommunityImageList.events.set(event.imageIDs, of: event.id, tx)
            var stored = event
            stored.displayed = false
            return stored
        }
    }

    func event(id: String, reader: CommunityReader) async throws -> EventRecord? {
        try await postgres.snapshot { tx in try await Self.event(id, reader: reader, tx) }
    }

    func updateEvent(id: String, _ fields: EventFieldsRecord, reader: CommunityReader, now: Int64) async throws {
        try await postgres.write { tx in
            try await Self.owned(id, reader: reader, tx)
            try await tx.query(
                """
                UPDATE housetainer_event SET title = \(fields.title), schedule_type = \(fields.scheduleType),
                    at_ms = \(fields.atMilliseconds), detail = \(fields.detail), link = \(fields.link),
                    updated_at_ms = \(now)
                WHERE id = \(id)
                """)
            try await CommunityImageList.events.set(fields.imageIDs, of: id, tx)
        }
    }

    func deleteEvent(id: String, reader: CommunityReader) async throws {
        try await postgres.write { tx in
            try await Self.owned(id, reader: reader, tx)
            try await tx.query("DELETE FROM housetainer_event WHERE id = \(id)")
        }
    }

    func setDisplay(eventID: String, displayed: Bool, app: AppID, now: Int64) async throws {
        try await postgres.write { tx in
            guard
                try await !tx.query(
                    """
                    UPDATE housetainer_event SET displayed = \(displayed) WHERE id = \(eventID) AND app = \(app.rawValue)
                    RETURNING 1
                    """
                ).isEmpty
            else { throw CommunityStoreError.notFound }
        }
    }

    func events(
        ongoing: Bool, now: Int64, reader: CommunityReader, after: PagePosition<Int64>?, limit: Int
    ) async throws -> EventPage {
        try await postgres.snapshot { tx in
            let events: [EventRecord]
            if ongoing {
                events = try await Self.events(
                    """
                    SELECT \(unescaped: Self.eventColumns) FROM \(reader: reader) CROSS JOIN housetainer_event e
                    WHERE \(unescaped: Self.visible) AND e.at_ms >= \(now)
                        AND (\(after?.key)::bigint IS NULL OR (e.at_ms, e.id) > (\(after?.key), \(after?.id)))
                    ORDER BY e.at_ms, e.id LIMIT \(limit)
                    """, tx)
            } else {
                events = try await Self.events(
                    """
                    SELECT \(unescaped: Self.eventColumns) FROM \(reader: reader) CROSS JOIN housetainer_event e
                    WHERE \(unescaped: Self.visible) AND e.at_ms < \(now)
                        AND (\(after?.key)::bigint IS NULL OR (e.at_ms, e.id) < (\(after?.key), \(after?.id)))
                    ORDER BY e.at_ms DESC, e.id DESC LIMIT \(limit)
                    """, tx)
            }
            return EventPage(events: events, keys: events.map(\.atMilliseconds))
        }
    }

    func memberEvents(memberID: String, reader: CommunityReader, after: PagePosition<Int64>?, limit: Int)
        async throws -> EventPage
    {
        try await postgres.snapshot { tx in
            let events = try await Self.events(
                """
                SELECT \(unescaped: Self.eventColumns) FROM \(reader: reader) CROSS JOIN housetainer_event e
                WHERE \(unescaped: Self.visible) AND e.owner_id = \(memberID)
                    AND (\(after?.key)::bigint IS NULL OR (e.created_at_ms, e.id) < (\(after?.key), \(after?.id)))
                ORDER BY e.created_at_ms DESC, e.id DESC LIMIT \(limit)
                """, tx)
            return EventPage(events: events, keys: events.map(\.createdAtMilliseconds))
        }
    }

    func bookmarkedEvents(reader: CommunityReader, after: PagePosition<Int64>?, limit: Int) async throws -> EventPage {
        try await postgres.snapshot { tx in
            let rows = try await tx.query(
                """
                SELECT \(unescaped: Self.eventColumns), mine.created_at_ms AS bookmarked_at_ms
                FROM \(reader: reader) CROSS JOIN housetainer_bookmark mine
                    JOIN housetainer_event e ON e.id = mine.event_id
                WHERE mine.member_id = r.me AND \(unescaped: Self.visible)
                    AND (\(after?.key)::bigint IS NULL OR (mine.created_at_ms, e.id) < (\(after?.key), \(after?.id)))
                ORDER BY mine.created_at_ms DESC, e.id DESC LIMIT \(limit)
                """)
            let events = try await Self.records(rows, tx)
            let keys = try rows.map { try $0.makeRandomAccess()["bookmarked_at_ms"].decode(Int64.self) }
            return EventPage(events: events, keys: keys)
        }
    }

    func bookmark(eventID: String, reader: CommunityReader, now: Int64) async throws -> Bool {
        try await postgres.write { tx in
            guard try await Self.lockEvent(eventID, .keyShare, tx),
                let event = try await Self.event(eventID, reader: reader, tx)
            else { throw CommunityStoreError.notFound }
            // The same bookmark on another replica at once waits for this commit, then inserts nothing.
            guard
                try await !tx.query(
                    """
                    INSERT INTO housetainer_bookmark (member_id, event_id, created_at_ms)
                    VALUES (\(reader.id), \(eventID), \(now))
                    ON CONFLICT (member_id, event_id) DO NOTHING
                    RETURNING 1
                    """
                ).isEmpty
            else { return false }
            try await notify(
                [event.ownerID], type: .eventBookmarked, actor: reader, target: .event(eventID), commentID: nil,
                now: now, tx)
            return true
        }
    }

    func unbookmark(eventID: String, reader: CommunityReader) async throws -> Bool {
        try await postgres.write { tx in
            guard try await Self.event(eventID, reader: reader, tx) != nil else { throw CommunityStoreError.notFound }
            return try await !tx.query(
                """
                DELETE FROM housetainer_bookmark WHERE member_id = \(reader.id) AND event_id = \(eventID) RETURNING 1
                """
            ).isEmpty
        }
    }

    // MARK: Helpers

    /// The owner's event with the client id `clientID`, as they see it.
    private static func event(clientID: String, reader: CommunityReader, _ tx: PostgresTransaction) async throws
        -> EventRecord?
    {
        try await events(
            """
            SELECT \(unescaped: eventColumns) FROM \(reader: reader) CROSS JOIN housetainer_event e
            WHERE \(unescaped: visible) AND e.owner_id = r.me AND e.client_id = \(clientID)
            """, tx
        ).first
    }

    /// A row lock's strength: `FOR UPDATE` to change or delete the row, `FOR KEY SHARE` to reference it.
    enum LockStrength: String {
        case update = "FOR UPDATE"
        case keyShare = "FOR KEY SHARE"
    }

    /// Locks the event's row until the transaction ends: false when there is none (any more).
    static func lockEvent(_ id: String, _ strength: LockStrength, _ tx: PostgresTransaction) async throws -> Bool {
        try await !tx.query("SELECT 1 FROM housetainer_event WHERE id = \(id) \(unescaped: strength.rawValue)")
            .isEmpty
    }

    /// Locks the event and throws unless `reader` owns it: `notFound` when they cannot see it (or it is
    /// gone), `notOwner` when they can.
    private static func owned(_ id: String, reader: CommunityReader, _ tx: PostgresTransaction) async throws {
        guard try await lockEvent(id, .update, tx), let event = try await event(id, reader: reader, tx) else {
            throw CommunityStoreError.notFound
        }
        guard event.ownerID == reader.id else { throw CommunityStoreError.notOwner }
    }

    /// One notification per recipient of `recipients` (the first type wins for a member listed twice),
    /// never to the actor, nor to anyone who blocked the actor; each with its push job, in `tx`.
    func notify(
        _ recipients: [String], type: CommunityNotificationType, actor: CommunityReader, target: CommentTarget,
        commentID: String?, now: Int64, _ tx: PostgresTransaction
    ) async throws {
        let (eventID, houseID) = SQLiteCommunityStore.columns(target)
        for recipient in recipients where recipient != actor.id {
            guard
                let row = try await tx.query(
                    """
                    INSERT INTO housetainer_notification
                        (app, recipient_id, actor_id, type, event_id, house_id, comment_id, created_at_ms)
                    SELECT \(actor.app.rawValue), \(recipient), \(actor.id), \(type.rawValue), \(eventID), \(houseID),
                        \(commentID), \(now)
                    WHERE NOT EXISTS (
                        SELECT 1 FROM housetainer_block WHERE blocker_id = \(recipient) AND blocked_id = \(actor.id))
                    RETURNING id
                    """
                ).first
            else { continue }
            try await push?.send(
                type, notificationID: try row.decode(Int64.self), to: recipient, actor: actor, target: target,
                commentID: commentID, in: tx)
        }
    }
}
