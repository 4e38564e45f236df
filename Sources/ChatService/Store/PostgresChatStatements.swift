import PostgresNIO
import ServiceRuntime

/// The statements of a send and of a stream's read, prepared once per connection (`HotStatement`): a send
/// runs about eight of them, and each parsed and planned again cost the database more than running it.
enum ChatStatements {
    /// A room with its members in the order they joined, its row locked for the rest of the transaction.
    enum LockRoom: HotStatement {
        static let parameters: [PostgresDataType] = [.text]
        static let sql = RoomWithMembers.sql + " FOR UPDATE"
    }

    /// A room with its members in the order they joined.
    enum RoomWithMembers: HotStatement {
        static let parameters: [PostgresDataType] = [.text]
        static let sql = """
            SELECT id, kind, created_at_ms, last_seq, last_activity_at_ms, closed_at_ms, app,
                ARRAY(SELECT user_id FROM chat_room_member m WHERE m.room_id = chat_room.id ORDER BY ordinal)
                    AS member_ids,
                ARRAY(SELECT role FROM chat_room_member m WHERE m.room_id = chat_room.id ORDER BY ordinal)
                    AS member_roles
            FROM chat_room WHERE id = $1
            """
    }

    enum InsertMessage: HotStatement {
        static let parameters: [PostgresDataType] = [
            .text, .int8, .text, .text, .text, .int8, .text, .text, .text, .text, .text, .text, .int4, .int4, .int8,
        ]
        static let sql = """
            INSERT INTO chat_message (room_id, seq, id, sender_id, client_message_id, sent_at_ms, body_kind,
                text, ref_id, title, image_id, image_url, image_width, image_height, start_at_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
            """
    }

    /// $1 the new last seq, $2 the activity time, $3 the room.
    enum MoveRoomHead: HotStatement {
        static let parameters: [PostgresDataType] = [.int8, .int8, .text]
        static let sql = "UPDATE chat_room SET last_seq = $1, last_activity_at_ms = $2 WHERE id = $3"
    }

    /// $1 the recipients in user-id order, $2 how many positions each takes: every head in one statement,
    /// locked in that order; answers each recipient's new last position.
    enum TakePositions: HotStatement {
        static let parameters: [PostgresDataType] = [.textArray, .int8Array]
        static let sql = """
            INSERT INTO chat_stream_head (user_id, last_position)
            SELECT * FROM unnest($1::text[], $2::bigint[]) ORDER BY 1
            ON CONFLICT (user_id) DO UPDATE SET last_position = chat_stream_head.last_position + EXCLUDED.last_position
            RETURNING user_id, last_position
            """
    }

    /// One array per column of `chat_event`.
    enum InsertEvents: HotStatement {
        static let parameters: [PostgresDataType] = [
            .textArray, .int8Array, .textArray, .textArray, .int8Array, .textArray, .int8Array, .int8Array, .int8Array,
        ]
        static let sql = """
            INSERT INTO chat_event (recipient_id, position, room_id, kind, seq, reader_id, read_seq, read_at_ms,
                created_at_ms)
            SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[],
                $7::bigint[], $8::bigint[], $9::bigint[])
            """
    }

    /// $1 rooms, $2 members, $3 their new activity positions.
    enum MoveActivity: HotStatement {
        static let parameters: [PostgresDataType] = [.textArray, .textArray, .int8Array]
        static let sql = """
            UPDATE chat_room_member SET activity_position = moved.activity
            FROM unnest($1::text[], $2::text[], $3::bigint[]) AS moved(room_id, user_id, activity)
            WHERE chat_room_member.room_id = moved.room_id AND chat_room_member.user_id = moved.user_id
            """
    }

    /// $1 the channel, $2 the payloads.
    enum Notify: HotStatement {
        static let parameters: [PostgresDataType] = [.text, .textArray]
        static let sql = "SELECT pg_notify($1, n) FROM unnest($2::text[]) AS n"
    }

    /// A recipient's events after a position ($2), at most $3, each message event joined to its message.
    enum EventsAfter: HotStatement {
        static let parameters: [PostgresDataType] = [.text, .int8, .int8]
        static let sql = """
            SELECT \(eventColumns)
            FROM chat_event e
            LEFT JOIN chat_message m ON e.kind = 'message' AND m.room_id = e.room_id AND m.seq = e.seq
            WHERE e.recipient_id = $1 AND e.position > $2
            ORDER BY e.position LIMIT $3
            """
    }

    /// `EventsAfter` and the recipient's pruning watermark (`pruned`) in one statement, so one snapshot:
    /// one row with only `pruned` when there is no event.
    enum EventsAndWatermark: HotStatement {
        static let parameters: [PostgresDataType] = [.text, .int8, .int8]
        static let sql = """
            SELECT w.pruned, e.*
            FROM (SELECT COALESCE((SELECT through_position FROM chat_event_pruned WHERE recipient_id = $1), 0)
                AS pruned) w
            LEFT JOIN LATERAL (\(EventsAfter.sql)) e ON true
            ORDER BY e.position
            """
    }

    /// `EventsAndWatermark` with the recipient's head (0 before its first event): a subscription's first
    /// read.
    enum EventsWatermarkAndHead: HotStatement {
        static let parameters: [PostgresDataType] = [.text, .int8, .int8]
        static let sql = """
            SELECT w.pruned, w.head, e.*
            FROM (SELECT COALESCE((SELECT through_position FROM chat_event_pruned WHERE recipient_id = $1), 0)
                    AS pruned,
                COALESCE((SELECT last_position FROM chat_stream_head WHERE user_id = $1), 0) AS head) w
            LEFT JOIN LATERAL (\(EventsAfter.sql)) e ON true
            ORDER BY e.position
            """
    }

    private static let eventColumns = """
        e.position, e.room_id, e.kind, e.reader_id, e.read_seq, e.read_at_ms,
            m.room_id AS m_room_id, m.seq AS m_seq, m.id AS m_id, m.sender_id AS m_sender_id,
            m.client_message_id AS m_client_message_id, m.sent_at_ms AS m_sent_at_ms,
            m.body_kind AS m_body_kind, m.text AS m_text, m.ref_id AS m_ref_id, m.title AS m_title,
            m.image_id AS m_image_id, m.image_url AS m_image_url, m.image_width AS m_image_width,
            m.image_height AS m_image_height, m.start_at_ms AS m_start_at_ms
        """

    /// A recipient's last position given out.
    enum Head: HotStatement {
        static let parameters: [PostgresDataType] = [.text]
        static let sql = "SELECT last_position FROM chat_stream_head WHERE user_id = $1"
    }

    /// A recipient's pruning watermark.
    enum PrunedThrough: HotStatement {
        static let parameters: [PostgresDataType] = [.text]
        static let sql = "SELECT through_position FROM chat_event_pruned WHERE recipient_id = $1"
    }
}
