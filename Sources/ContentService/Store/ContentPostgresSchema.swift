import ServiceRuntime

/// ContentSchema's versions on PostgreSQL: the same names in the same order (docs/postgres.md,
/// "Migrations"), one statement per string. The service's list is `RuntimePostgresSchema.migrations`,
/// these, then Housetainer's `content-housetainer-1`, as `ContentServiceDefinition` registers the SQLite ones.
///
/// Differences from SQLite, each for the other engine: integers are `bigint`; ids of images, posts and
/// reviews compare in byte order (`COLLATE "C"`, SQLite's BINARY), so keyset pages break ties as on
/// SQLite whatever the database's collation; the unique reservation of a review is a named constraint
/// (`review_reservation_id_key`, told apart by name as `alreadyReviewed`).
/// Nothing else differs: every guarantee SQLite's single writer gave is held by `PostgresContentStore`'s
/// locks, documented there.
enum ContentPostgresSchema {
    static let migrations: [PostgresMigration] = [
        contentOne, pins, moderation, likesByTime, imageVariants, apps, imageBlobs,
    ]

    /// PostgreSQL's only version of its own: the bytes SQLite's replica keeps as files
    /// (`<data>/images`, `<data>/image-variants`), here rows every replica reads (`PostgresImageBlobStore`).
    static let imageBlobs = PostgresMigration(
        "content-postgres-image-blobs",
        ["CREATE TABLE image_blob (sha256 text COLLATE \"C\" PRIMARY KEY, bytes bytea NOT NULL)"])

    /// Image rows point at content-addressed blobs (`image_blob` rows on this engine); several rows may share
    /// one blob. `image_blob_garbage` lists blobs that may have lost their last image row; the collection
    /// deletes those that did (after a purge, and again at start). A designer's review summary is written in the same transaction as its reviews.
    static let contentOne = PostgresMigration(
        "content-1",
        [
            """
            CREATE TABLE image (
                id text COLLATE "C" PRIMARY KEY,
                owner_id text NOT NULL,
                sha256 text NOT NULL,
                content_type text NOT NULL,
                width bigint NOT NULL,
                height bigint NOT NULL,
                byte_count bigint NOT NULL,
                created_at_ms bigint NOT NULL
            )
            """,
            "CREATE INDEX image_by_owner ON image (owner_id)",
            "CREATE INDEX image_by_sha ON image (sha256)",
            "CREATE TABLE image_blob_garbage (sha256 text PRIMARY KEY)",
            """
            CREATE TABLE post (
                id text COLLATE "C" PRIMARY KEY,
                app text NOT NULL DEFAULT 'yedi',
                designer_id text NOT NULL,
                title text NOT NULL,
                description text NOT NULL,
                price_krw bigint NOT NULL,
                category bigint NOT NULL,
                like_count bigint NOT NULL DEFAULT 0 CHECK (like_count >= 0),
                created_at_ms bigint NOT NULL,
                updated_at_ms bigint NOT NULL
            )
            """,
            "CREATE INDEX post_by_time ON post (created_at_ms DESC, id DESC)",
            "CREATE INDEX post_by_designer ON post (designer_id, created_at_ms DESC, id DESC)",
            "CREATE INDEX post_by_category ON post (category, created_at_ms DESC, id DESC)",
            """
            CREATE TABLE post_image (
                post_id text COLLATE "C" NOT NULL REFERENCES post(id) ON DELETE CASCADE,
                position bigint NOT NULL,
                image_id text COLLATE "C" NOT NULL REFERENCES image(id),
                PRIMARY KEY (post_id, position)
            )
            """,
            "CREATE INDEX post_image_by_image ON post_image (image_id)",
            """
            CREATE TABLE post_like (
                post_id text COLLATE "C" NOT NULL REFERENCES post(id) ON DELETE CASCADE,
                user_id text NOT NULL,
                liked_at_ms bigint NOT NULL,
                PRIMARY KEY (post_id, user_id)
            )
            """,
            "CREATE INDEX post_like_by_user ON post_like (user_id, liked_at_ms DESC, post_id DESC)",
            """
            CREATE TABLE review (
                id text COLLATE "C" PRIMARY KEY,
                app text NOT NULL DEFAULT 'yedi',
                reservation_id text NOT NULL CONSTRAINT review_reservation_id_key UNIQUE,
                designer_id text NOT NULL,
                customer_id text NOT NULL,
                score bigint NOT NULL CHECK (score BETWEEN 1 AND 5),
                text text NOT NULL,
                created_at_ms bigint NOT NULL
            )
            """,
            "CREATE INDEX review_by_designer ON review (designer_id, created_at_ms DESC, id DESC)",
            "CREATE INDEX review_by_customer ON review (customer_id, created_at_ms DESC, id DESC)",
            """
            CREATE TABLE review_image (
                review_id text COLLATE "C" NOT NULL REFERENCES review(id) ON DELETE CASCADE,
                position bigint NOT NULL,
                image_id text COLLATE "C" NOT NULL REFERENCES image(id),
                PRIMARY KEY (review_id, position)
            )
            """,
            "CREATE INDEX review_image_by_image ON review_image (image_id)",
            """
            CREATE TABLE review_keyword (
                review_id text COLLATE "C" NOT NULL REFERENCES review(id) ON DELETE CASCADE,
                position bigint NOT NULL,
                keyword bigint NOT NULL,
                PRIMARY KEY (review_id, keyword)
            )
            """,
            """
            CREATE TABLE review_summary (
                designer_id text PRIMARY KEY,
                review_count bigint NOT NULL CHECK (review_count >= 0),
                score_total bigint NOT NULL CHECK (score_total >= 0)
            )
            """,
            """
            CREATE TABLE review_keyword_count (
                designer_id text NOT NULL REFERENCES review_summary(designer_id) ON DELETE CASCADE,
                keyword bigint NOT NULL,
                count bigint NOT NULL CHECK (count > 0),
                PRIMARY KEY (designer_id, keyword)
            )
            """,
        ])

    /// Issue 24: images ChatService's messages use are pinned; every image older than the version is.
    static let pins = PostgresMigration(
        "content-2",
        [
            "ALTER TABLE image ADD COLUMN pinned_at_ms bigint",
            "UPDATE image SET pinned_at_ms = created_at_ms",
            "CREATE INDEX image_by_time ON image (created_at_ms)",
        ])

    /// Issue 26: operators hide posts and reviews and feature posts.
    static let moderation = PostgresMigration(
        "content-3-moderation",
        [
            "ALTER TABLE post ADD COLUMN hidden_at_ms bigint",
            "ALTER TABLE post ADD COLUMN featured_at_ms bigint",
            """
            CREATE INDEX post_featured ON post (featured_at_ms DESC, id DESC)
                WHERE featured_at_ms IS NOT NULL AND hidden_at_ms IS NULL
            """,
            "ALTER TABLE review ADD COLUMN hidden_at_ms bigint",
        ])

    /// Issue 27: the RECOMMENDED feed counts the likes of a recent window.
    static let likesByTime = PostgresMigration(
        "content-4-likes-by-time", ["CREATE INDEX post_like_by_time ON post_like (liked_at_ms)"])

    /// Issue 26: each image's resized JPEGs, found by name when a URL asks for one.
    static let imageVariants = PostgresMigration(
        "content-5-image-variants",
        [
            "ALTER TABLE image ADD COLUMN large_sha256 text",
            "ALTER TABLE image ADD COLUMN thumbnail_sha256 text",
            "CREATE INDEX image_by_large ON image (large_sha256)",
            "CREATE INDEX image_by_thumbnail ON image (thumbnail_sha256)",
        ])

    /// Issue 26, apps as tenants: images and likes carry their app; older rows are YeDi's.
    static let apps = PostgresMigration(
        "content-6-apps",
        [
            "ALTER TABLE image ADD COLUMN app text NOT NULL DEFAULT 'yedi'",
            "ALTER TABLE post_like ADD COLUMN app text NOT NULL DEFAULT 'yedi'",
        ])
}
