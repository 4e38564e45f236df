import ServiceRuntime

/// ChatService's tables on PostgreSQL, in step with `ChatSchema` (same version names, same order).
///
/// One difference of design, not of translation: stream positions are **per recipient**
/// (`chat_stream_head`), not one global counter. A sequence is not commit-ordered: with several writers a
/// reader at 101 could skip a 100 that commits later. A transaction takes its recipients' next positions
/// from their head rows, in user-id order, last in its work; so a committed position P of a recipient means
/// every lower one of that recipient has committed (docs/chat.md, "Positions"). For the same reason each
/// member keeps its own activity position (the room list's order), where SQLite keeps one per room.
enum ChatPostgresSchema {
    static let migrations: [PostgresMigration] = [chat1, chat2, chat3, apps, presence]

    /// Rooms of a customer and a designer, members with read cursors, messages, and the durable stream.
    static let chat1 = PostgresMigration(
        "chat-1",
        [
            """
            CREATE TABLE chat_room (
                id text PRIMARY KEY,
                kind text NOT NULL,
                customer_id text NOT NULL,
                designer_id text NOT NULL,
                created_at_ms bigint NOT NULL,
                last_seq bigint NOT NULL DEFAULT 0,
                last_activity_at_ms bigint NOT NULL,
                UNIQUE (kind, customer_id, designer_id)
            )
            """,
            """
            CREATE TABLE chat_room_member (
                room_id text NOT NULL REFERENCES chat_room (id) ON DELETE CASCADE,
                user_id text NOT NULL,
                -- The order members joined in (SQLite's rowid order).
                ordinal integer NOT NULL DEFAULT 0,
                read_seq bigint NOT NULL DEFAULT 0 CHECK (read_seq >= 0),
                read_at_ms bigint NOT NULL DEFAULT 0,
                -- This member's stream position of the room's last activity: the member's room list order.
                activity_position bigint NOT NULL DEFAULT 0,
                PRIMARY KEY (room_id, user_id)
            )
            """,
            "CREATE INDEX chat_room_member_by_user ON chat_room_member (user_id, activity_position)",
            """
            CREATE TABLE chat_message (
                room_id text NOT NULL REFERENCES chat_room (id) ON DELETE CASCADE,
                seq bigint NOT NULL CHECK (seq > 0),
                id text NOT NULL UNIQUE,
                sender_id text NOT NULL,
                client_message_id text,
                sent_at_ms bigint NOT NULL,
                body_kind text NOT NULL,
                text text NOT NULL DEFAULT '',
                ref_id text NOT NULL DEFAULT '',
                title text NOT NULL DEFAULT '',
                image_id text,
                image_url text NOT NULL DEFAULT '',
                image_width integer NOT NULL DEFAULT 0,
                image_height integer NOT NULL DEFAULT 0,
                start_at_ms bigint NOT NULL DEFAULT 0,
                PRIMARY KEY (room_id, seq),
                CONSTRAINT chat_message_client_id UNIQUE (room_id, sender_id, client_message_id)
            )
            """,
            // A recipient's last position given out. Kept when the user's events are purged: positions are
            // never reused.
            """
            CREATE TABLE chat_stream_head (
                user_id text PRIMARY KEY,
                last_position bigint NOT NULL CHECK (last_position > 0)
            )
            """,
            """
            CREATE TABLE chat_event (
                recipient_id text NOT NULL,
                position bigint NOT NULL,
                room_id text NOT NULL,
                kind text NOT NULL,
                seq bigint NOT NULL DEFAULT 0,
                reader_id text NOT NULL DEFAULT '',
                read_seq bigint NOT NULL DEFAULT 0,
                read_at_ms bigint NOT NULL DEFAULT 0,
                created_at_ms bigint NOT NULL,
                PRIMARY KEY (recipient_id, position)
            )
            """,
            "CREATE INDEX chat_event_by_room ON chat_event (room_id)",
        ])

    /// The rooms quota's index and the pruning watermarks (see `ChatSchema`, `chat-2`).
    static let chat2 = PostgresMigration(
        "chat-2",
        [
            "CREATE INDEX chat_room_by_customer ON chat_room (customer_id, created_at_ms)",
            """
            CREATE TABLE chat_event_pruned (
                recipient_id text PRIMARY KEY,
                through_position bigint NOT NULL
            )
            """,
            // Pruning looks for each recipient's first event to keep.
            "CREATE INDEX chat_event_by_age ON chat_event (created_at_ms)",
        ])

    /// Rooms beyond a customer and a designer (see `ChatSchema`, `chat-3`): roles on members, an open key
    /// unique among open rooms, the opener, closing.
    static let chat3 = PostgresMigration(
        "chat-3",
        [
            "ALTER TABLE chat_room ADD COLUMN open_key text, ADD COLUMN opened_by text, ADD COLUMN closed_at_ms bigint",
            """
            UPDATE chat_room SET open_key = octet_length(customer_id) || ':' || customer_id || designer_id,
                opened_by = customer_id
            """,
            "ALTER TABLE chat_room_member ADD COLUMN role text NOT NULL DEFAULT 'member'",
            """
            UPDATE chat_room_member m SET role = 'customer' FROM chat_room r
            WHERE r.id = m.room_id AND m.user_id = r.customer_id
            """,
            """
            UPDATE chat_room_member m SET role = 'designer' FROM chat_room r
            WHERE r.id = m.room_id AND m.user_id = r.designer_id
            """,
            "DROP INDEX chat_room_by_customer",
            "ALTER TABLE chat_room DROP COLUMN customer_id, DROP COLUMN designer_id",
            "CREATE UNIQUE INDEX chat_room_one_open ON chat_room (kind, open_key) WHERE closed_at_ms IS NULL",
            "CREATE INDEX chat_room_by_opener ON chat_room (opened_by, created_at_ms)",
        ])

    /// Each room carries its app (see `ChatSchema`, `chat-4-room-apps`).
    static let apps = PostgresMigration(
        "chat-4-room-apps",
        [
            "ALTER TABLE chat_room ADD COLUMN app text NOT NULL DEFAULT 'yedi'",
            "UPDATE chat_room SET app = 'slp' WHERE kind = 'slp-match'",
        ])

    /// Who has a stream open on which replica (`PostgresStreamPresence`): a replica's users count while its
    /// lease holds, and go with its row.
    static let presence = PostgresMigration(
        "chat-5-presence",
        [
            """
            CREATE TABLE chat_presence_replica (
                replica text PRIMARY KEY,
                alive_until timestamptz NOT NULL
            )
            """,
            """
            CREATE TABLE chat_presence (
                user_id text NOT NULL,
                replica text NOT NULL REFERENCES chat_presence_replica (replica) ON DELETE CASCADE,
                PRIMARY KEY (user_id, replica)
            )
            """,
            "CREATE INDEX chat_presence_by_replica ON chat_presence (replica)",
        ])
}
