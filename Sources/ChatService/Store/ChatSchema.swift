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
        // Issue 26: rooms beyond a customer and a designer. Members and their roles live in
        // chat_room_member only (the customer_id/designer_id columns go); a room can be closed; a pair may
        // have several rooms over time. "One open room of a kind per pair" (YeDi's OpenRoom) stays a rule
        // of the schema: a partial unique index over `open_key` (the pair, as `RoomOpenKey` spells it) of
        // the open rooms. SQLite cannot drop a UNIQUE column, so chat_room is rebuilt (foreign keys are off
        // during a GRDB migration and checked at its end; messages and members keep pointing at chat_room).
        migrator.registerMigration("chat-3") { db in
            try db.execute(
                sql: """
                    CREATE TABLE chat_room_new (
                        id TEXT PRIMARY KEY,
                        kind TEXT NOT NULL,
                        -- At most one open room of a kind holds a key (consult: the customer and the
                        -- designer); NULL when the kind has no such rule.
                        open_key TEXT,
                        -- Who opened it (the rooms.day quota counts these); NULL when nobody did (a match).
                        opened_by TEXT,
                        created_at_ms INTEGER NOT NULL,
                        last_seq INTEGER NOT NULL DEFAULT 0,
                        last_activity_at_ms INTEGER NOT NULL,
                        activity_position INTEGER NOT NULL DEFAULT 0,
                        closed_at_ms INTEGER
                    );
                    INSERT INTO chat_room_new (id, kind, open_key, opened_by, created_at_ms, last_seq,
                        last_activity_at_ms, activity_position)
                    SELECT id, kind, length(CAST(customer_id AS BLOB)) || ':' || customer_id || designer_id,
                        customer_id, created_at_ms, last_seq, last_activity_at_ms, activity_position
                    FROM chat_room;
                    ALTER TABLE chat_room_member ADD COLUMN role TEXT NOT NULL DEFAULT 'member';
                    UPDATE chat_room_member SET role = 'customer'
                        WHERE user_id = (SELECT customer_id FROM chat_room r WHERE r.id = room_id);
                    UPDATE chat_room_member SET role = 'designer'
                        WHERE user_id = (SELECT designer_id FROM chat_room r WHERE r.id = room_id);
                    DROP TABLE chat_room;
                    ALTER TABLE chat_room_new RENAME TO chat_room;
                    CREATE UNIQUE INDEX chat_room_one_open ON chat_room(kind, open_key) WHERE closed_at_ms IS NULL;
                    CREATE INDEX chat_room_by_opener ON chat_room(opened_by, created_at_ms);
                    """)
        }
        // Issue 26 (apps as tenants), now that SLP's match rooms share the table with YeDi's consult rooms:
        // each room carries its app, set from its kind, and every read filters by the caller's app.
        migrator.registerMigration("chat-4-room-apps") { db in
            try db.execute(
                sql: """
                    ALTER TABLE chat_room ADD COLUMN app TEXT NOT NULL DEFAULT 'yedi';
                    UPDATE chat_room SET app = 'slp' WHERE kind = 'slp-match';
                    """)
        }
        // In step with PostgreSQL's version of the same name, which lists who has a stream open on which
        // replica. One process knows its own streams: nothing to store here.
        migrator.registerMigration("chat-5-presence") { _ in }
    }
}
