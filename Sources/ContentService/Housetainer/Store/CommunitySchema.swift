import GRDB

/// Housetainer's community tables (docs/housetainer.md), in ContentService's database beside the images
/// events show: a comment or bookmark and its notifications commit together, and blocks filter every
/// list inside its query.
enum CommunitySchema {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        // Issue 29. An event's or house's images, bookmarks, comments and notifications go with it, and a
        // comment's notifications with the comment (ON DELETE CASCADE). Picks name their items loosely: the
        // home shows those still displayed. Members live in AccountService: their ids
        // are plain text here, and `PurgeUser` removes what they own or wrote (`SQLiteCommunityStore.forget`).
        migrator.registerMigration("content-housetainer-1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE housetainer_event (
                        id TEXT PRIMARY KEY NOT NULL,
                        app TEXT NOT NULL,
                        owner_id TEXT NOT NULL,
                        client_id TEXT NOT NULL,
                        title TEXT NOT NULL,
                        schedule_type INTEGER NOT NULL CHECK (schedule_type IN (1, 2)),
                        at_ms INTEGER NOT NULL,
                        detail TEXT NOT NULL,
                        link TEXT NOT NULL,
                        displayed INTEGER NOT NULL DEFAULT 0,
                        created_at_ms INTEGER NOT NULL,
                        updated_at_ms INTEGER NOT NULL,
                        UNIQUE (app, owner_id, client_id)
                    );
                    CREATE INDEX housetainer_event_by_time ON housetainer_event(app, at_ms, id);
                    CREATE INDEX housetainer_event_by_owner ON housetainer_event(owner_id, created_at_ms, id);
                    CREATE TABLE housetainer_event_image (
                        event_id TEXT NOT NULL REFERENCES housetainer_event(id) ON DELETE CASCADE,
                        position INTEGER NOT NULL,
                        image_id TEXT NOT NULL,
                        PRIMARY KEY (event_id, position)
                    );
                    CREATE INDEX housetainer_event_image_by_image ON housetainer_event_image(image_id);
                    CREATE TABLE housetainer_bookmark (
                        member_id TEXT NOT NULL,
                        event_id TEXT NOT NULL REFERENCES housetainer_event(id) ON DELETE CASCADE,
                        created_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (member_id, event_id)
                    );
                    CREATE INDEX housetainer_bookmark_by_event ON housetainer_bookmark(event_id);
                    CREATE INDEX housetainer_bookmark_newest ON housetainer_bookmark(member_id, created_at_ms, event_id);
                    CREATE TABLE housetainer_house (
                        id TEXT PRIMARY KEY NOT NULL,
                        app TEXT NOT NULL,
                        owner_id TEXT NOT NULL,
                        creator_id TEXT NOT NULL,
                        client_id TEXT NOT NULL,
                        name TEXT NOT NULL,
                        title TEXT NOT NULL,
                        content TEXT NOT NULL,
                        category INTEGER NOT NULL CHECK (category IN (1, 2, 3, 4)),
                        cover_index INTEGER NOT NULL,
                        domestic INTEGER NOT NULL,
                        location TEXT NOT NULL,
                        detailed_location TEXT NOT NULL,
                        displayed INTEGER NOT NULL DEFAULT 0,
                        created_at_ms INTEGER NOT NULL,
                        updated_at_ms INTEGER NOT NULL,
                        UNIQUE (app, creator_id, client_id)
                    );
                    CREATE INDEX housetainer_house_newest ON housetainer_house(app, created_at_ms, id);
                    CREATE INDEX housetainer_house_by_owner ON housetainer_house(owner_id, created_at_ms, id);
                    CREATE TABLE housetainer_house_image (
                        house_id TEXT NOT NULL REFERENCES housetainer_house(id) ON DELETE CASCADE,
                        position INTEGER NOT NULL,
                        image_id TEXT NOT NULL,
                        PRIMARY KEY (house_id, position)
                    );
                    CREATE INDEX housetainer_house_image_by_image ON housetainer_house_image(image_id);
                    CREATE TABLE housetainer_pick (
                        app TEXT NOT NULL,
                        kind TEXT NOT NULL CHECK (kind IN ('moment', 'event', 'house')),
                        position INTEGER NOT NULL,
                        target_id TEXT NOT NULL,
                        PRIMARY KEY (app, kind, position)
                    );
                    CREATE TABLE housetainer_comment (
                        id TEXT PRIMARY KEY NOT NULL,
                        app TEXT NOT NULL,
                        event_id TEXT REFERENCES housetainer_event(id) ON DELETE CASCADE,
                        house_id TEXT REFERENCES housetainer_house(id) ON DELETE CASCADE,
                        writer_id TEXT NOT NULL,
                        client_id TEXT NOT NULL,
                        content TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL,
                        UNIQUE (app, writer_id, client_id),
                        CHECK ((event_id IS NULL) != (house_id IS NULL))
                    );
                    CREATE INDEX housetainer_comment_by_event ON housetainer_comment(event_id, created_at_ms, id);
                    CREATE INDEX housetainer_comment_by_house ON housetainer_comment(house_id, created_at_ms, id);
                    CREATE TABLE housetainer_notification (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        app TEXT NOT NULL,
                        recipient_id TEXT NOT NULL,
                        actor_id TEXT NOT NULL,
                        type INTEGER NOT NULL CHECK (type IN (1, 2, 3, 4)),
                        event_id TEXT REFERENCES housetainer_event(id) ON DELETE CASCADE,
                        house_id TEXT REFERENCES housetainer_house(id) ON DELETE CASCADE,
                        comment_id TEXT REFERENCES housetainer_comment(id) ON DELETE CASCADE,
                        read INTEGER NOT NULL DEFAULT 0,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX housetainer_notification_inbox ON housetainer_notification(recipient_id, id);
                    CREATE INDEX housetainer_notification_by_actor ON housetainer_notification(actor_id);
                    CREATE INDEX housetainer_notification_by_event ON housetainer_notification(event_id);
                    CREATE INDEX housetainer_notification_by_house ON housetainer_notification(house_id);
                    CREATE INDEX housetainer_notification_by_comment ON housetainer_notification(comment_id);
                    CREATE TABLE housetainer_block (
                        blocker_id TEXT NOT NULL,
                        blocked_id TEXT NOT NULL,
                        app TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (blocker_id, blocked_id)
                    );
                    CREATE INDEX housetainer_block_by_blocked ON housetainer_block(blocked_id);
                    """)
        }
    }
}
