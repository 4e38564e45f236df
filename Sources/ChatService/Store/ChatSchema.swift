import GRDB

/// ChatService's tables, one migration per schema version.
enum ChatSchema {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("chat-1") { db in
            try db.execute(
                sql: """
                    -- One room per (kind, customer, designer): the UNIQUE constraint is what makes concurrent
                    -- "consult" calls for one pair share a room. `kind` and chat_room_member leave room for
                    -- other pairs later (matched users of a sibling app) without touching the messages.
                    CREATE TABLE chat_room (
                        id TEXT PRIMARY KEY,
                        kind TEXT NOT NULL,
                        customer_id TEXT NOT NULL,
                        designer_id TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL,
                        last_seq INTEGER NOT NULL DEFAULT 0,
                        last_activity_at_ms INTEGER NOT NULL,
                        -- The global event position of the room's last activity: orders the room list
                        -- even when many messages share a millisecond.
                        activity_position INTEGER NOT NULL DEFAULT 0,
                        UNIQUE (kind, customer_id, designer_id)
                    );
                    CREATE TABLE chat_room_member (
                        room_id TEXT NOT NULL REFERENCES chat_room(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL,
                        read_seq INTEGER NOT NULL DEFAULT 0 CHECK (read_seq >= 0),
                        read_at_ms INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (room_id, user_id)
                    );
                    CREATE INDEX chat_room_member_by_user ON chat_room_member(user_id);
                    -- Bodies in columns by kind: text (text, or a post share's note), ref_id (the image,
                    -- post or reservation id), title (post title), image_* (the image or the post's first
                    -- photo), start_at_ms (reservation).
                    CREATE TABLE chat_message (
                        room_id TEXT NOT NULL REFERENCES chat_room(id) ON DELETE CASCADE,
                        seq INTEGER NOT NULL CHECK (seq > 0),
                        id TEXT NOT NULL UNIQUE,
                        sender_id TEXT NOT NULL,
                        client_message_id TEXT,
                        sent_at_ms INTEGER NOT NULL,
                        body_kind TEXT NOT NULL,
                        text TEXT NOT NULL DEFAULT '',
                        ref_id TEXT NOT NULL DEFAULT '',
                        title TEXT NOT NULL DEFAULT '',
                        image_id TEXT,
                        image_url TEXT NOT NULL DEFAULT '',
                        image_width INTEGER NOT NULL DEFAULT 0,
                        image_height INTEGER NOT NULL DEFAULT 0,
                        start_at_ms INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (room_id, seq),
                        UNIQUE (room_id, sender_id, client_message_id)
                    );
                    -- The durable stream: one row per (recipient, event). `position` is global and only
                    -- grows (AUTOINCREMENT never reuses a purged one), so a client's last position means
                    -- the same thing after a restart. A message event points at its message row.
                    CREATE TABLE chat_event (
                        position INTEGER PRIMARY KEY AUTOINCREMENT,
                        recipient_id TEXT NOT NULL,
                        room_id TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        seq INTEGER NOT NULL DEFAULT 0,
                        reader_id TEXT NOT NULL DEFAULT '',
                        read_seq INTEGER NOT NULL DEFAULT 0,
                        read_at_ms INTEGER NOT NULL DEFAULT 0,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX chat_event_by_recipient ON chat_event(recipient_id, position);
                    CREATE INDEX chat_event_by_room ON chat_event(room_id);
                    """)
        }
        // Issue 24: the rooms.day quota counts a customer's rooms by creation time; pruning old events
        // records, per recipient, the highest position it removed, so a resume from before it is refused
        // (and only then: a recipient who had seen everything pruned resumes as before).
        migrator.registerMigration("chat-2") { db in
            try db.execute(
                sql: """
                    CREATE INDEX chat_room_by_customer ON chat_room(customer_id, created_at_ms);
                    CREATE TABLE chat_event_pruned (
                        recipient_id TEXT PRIMARY KEY,
                        through_position INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    """)
        }
    }
}
