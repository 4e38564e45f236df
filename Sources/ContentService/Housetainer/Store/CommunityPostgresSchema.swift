import ServiceRuntime

/// CommunitySchema's version on PostgreSQL, the same name, one statement per string, after ContentService's
/// own six (no table here references theirs: images are named by id, members live in AccountService).
///
/// Differences from SQLite, each for the other engine: flags are `boolean`, numbers `bigint`; the
/// notification id is an identity column (SQLite's AUTOINCREMENT); ids compare in byte order (`COLLATE
/// "C"`, SQLite's BINARY), so keyset pages and their indexes agree whatever the database's collation. The
/// unique constraints a retry meets are named: the store inserts `ON CONFLICT ON CONSTRAINT` them.
enum CommunityPostgresSchema {
    static let migrations: [PostgresMigration] = [community]

    /// Issue 29. An event's or house's images, bookmarks, comments and notifications go with it, and a
    /// comment's notifications with the comment (ON DELETE CASCADE). Picks name their items loosely.
    static let community = PostgresMigration(
        "content-housetainer-1",
        [
            """
            CREATE TABLE housetainer_event (
                id text COLLATE "C" PRIMARY KEY,
                app text NOT NULL,
                owner_id text NOT NULL,
                client_id text NOT NULL,
                title text NOT NULL,
                schedule_type bigint NOT NULL CHECK (schedule_type IN (1, 2)),
                at_ms bigint NOT NULL,
                detail text NOT NULL,
                link text NOT NULL,
                displayed boolean NOT NULL DEFAULT false,
                created_at_ms bigint NOT NULL,
                updated_at_ms bigint NOT NULL,
                CONSTRAINT housetainer_event_client UNIQUE (app, owner_id, client_id)
            )
            """,
            "CREATE INDEX housetainer_event_by_time ON housetainer_event (app, at_ms, id)",
            "CREATE INDEX housetainer_event_by_owner ON housetainer_event (owner_id, created_at_ms, id)",
            """
            CREATE TABLE housetainer_event_image (
                event_id text COLLATE "C" NOT NULL REFERENCES housetainer_event(id) ON DELETE CASCADE,
                position bigint NOT NULL,
                image_id text NOT NULL,
                PRIMARY KEY (event_id, position)
            )
            """,
            "CREATE INDEX housetainer_event_image_by_image ON housetainer_event_image (image_id)",
            """
            CREATE TABLE housetainer_bookmark (
                member_id text NOT NULL,
                event_id text COLLATE "C" NOT NULL REFERENCES housetainer_event(id) ON DELETE CASCADE,
                created_at_ms bigint NOT NULL,
                PRIMARY KEY (member_id, event_id)
            )
            """,
            "CREATE INDEX housetainer_bookmark_by_event ON housetainer_bookmark (event_id)",
            "CREATE INDEX housetainer_bookmark_newest ON housetainer_bookmark (member_id, created_at_ms, event_id)",
            """
            CREATE TABLE housetainer_house (
                id text COLLATE "C" PRIMARY KEY,
                app text NOT NULL,
                owner_id text NOT NULL,
                creator_id text NOT NULL,
                client_id text NOT NULL,
                name text NOT NULL,
                title text NOT NULL,
                content text NOT NULL,
                category bigint NOT NULL CHECK (category IN (1, 2, 3, 4)),
                cover_index bigint NOT NULL,
                domestic boolean NOT NULL,
                location text NOT NULL,
                detailed_location text NOT NULL,
                displayed boolean NOT NULL DEFAULT false,
                created_at_ms bigint NOT NULL,
                updated_at_ms bigint NOT NULL,
                CONSTRAINT housetainer_house_client UNIQUE (app, creator_id, client_id)
            )
            """,
            "CREATE INDEX housetainer_house_newest ON housetainer_house (app, created_at_ms, id)",
            "CREATE INDEX housetainer_house_by_owner ON housetainer_house (owner_id, created_at_ms, id)",
            """
            CREATE TABLE housetainer_house_image (
                house_id text COLLATE "C" NOT NULL REFERENCES housetainer_house(id) ON DELETE CASCADE,
                position bigint NOT NULL,
                image_id text NOT NULL,
                PRIMARY KEY (house_id, position)
            )
            """,
            "CREATE INDEX housetainer_house_image_by_image ON housetainer_house_image (image_id)",
            """
            CREATE TABLE housetainer_pick (
                app text NOT NULL,
                kind text NOT NULL CHECK (kind IN ('moment', 'event', 'house')),
                position bigint NOT NULL,
                target_id text COLLATE "C" NOT NULL,
                PRIMARY KEY (app, kind, position)
            )
            """,
            """
            CREATE TABLE housetainer_comment (
                id text COLLATE "C" PRIMARY KEY,
                app text NOT NULL,
                event_id text COLLATE "C" REFERENCES housetainer_event(id) ON DELETE CASCADE,
                house_id text COLLATE "C" REFERENCES housetainer_house(id) ON DELETE CASCADE,
                writer_id text NOT NULL,
                client_id text NOT NULL,
                content text NOT NULL,
                created_at_ms bigint NOT NULL,
                CONSTRAINT housetainer_comment_client UNIQUE (app, writer_id, client_id),
                CHECK ((event_id IS NULL) <> (house_id IS NULL))
            )
            """,
            "CREATE INDEX housetainer_comment_by_event ON housetainer_comment (event_id, created_at_ms, id)",
            "CREATE INDEX housetainer_comment_by_house ON housetainer_comment (house_id, created_at_ms, id)",
            """
            CREATE TABLE housetainer_notification (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                app text NOT NULL,
                recipient_id text NOT NULL,
                actor_id text NOT NULL,
                type bigint NOT NULL CHECK (type IN (1, 2, 3, 4)),
                event_id text COLLATE "C" REFERENCES housetainer_event(id) ON DELETE CASCADE,
                house_id text COLLATE "C" REFERENCES housetainer_house(id) ON DELETE CASCADE,
                comment_id text COLLATE "C" REFERENCES housetainer_comment(id) ON DELETE CASCADE,
                read boolean NOT NULL DEFAULT false,
                created_at_ms bigint NOT NULL
            )
            """,
            "CREATE INDEX housetainer_notification_inbox ON housetainer_notification (recipient_id, id)",
            "CREATE INDEX housetainer_notification_by_actor ON housetainer_notification (actor_id)",
            "CREATE INDEX housetainer_notification_by_event ON housetainer_notification (event_id)",
            "CREATE INDEX housetainer_notification_by_house ON housetainer_notification (house_id)",
            "CREATE INDEX housetainer_notification_by_comment ON housetainer_notification (comment_id)",
            """
            CREATE TABLE housetainer_block (
                blocker_id text NOT NULL,
                blocked_id text NOT NULL,
                app text NOT NULL,
                created_at_ms bigint NOT NULL,
                PRIMARY KEY (blocker_id, blocked_id)
            )
            """,
            "CREATE INDEX housetainer_block_by_blocked ON housetainer_block (blocked_id)",
        ])
}
