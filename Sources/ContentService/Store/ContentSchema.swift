import GRDB

/// ContentService's tables, one migration per schema version.
///
/// Every row of a user or a piece of content carries its `app` (children — photos, keywords — go by their
/// parent's); open for what later issues add: comments, bookmarks
/// and reports as tables referencing `post(id)` with `ON DELETE CASCADE`.
enum ContentSchema {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("content-1") { db in
            try db.execute(
                sql: """
                    -- Image rows point at content-addressed blobs (<data>/images/<sha256>); several rows (the
                    -- same bytes uploaded twice) may share one blob.
                    CREATE TABLE image (
                        id TEXT PRIMARY KEY,
                        owner_id TEXT NOT NULL,
                        sha256 TEXT NOT NULL,
                        content_type TEXT NOT NULL,
                        width INTEGER NOT NULL,
                        height INTEGER NOT NULL,
                        byte_count INTEGER NOT NULL,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX image_by_owner ON image(owner_id);
                    CREATE INDEX image_by_sha ON image(sha256);
                    -- Blobs that lost their last image row; deleted after the commit (and again at start,
                    -- should the process die in between).
                    CREATE TABLE image_blob_garbage (sha256 TEXT PRIMARY KEY);

                    CREATE TABLE post (
                        id TEXT PRIMARY KEY,
                        app TEXT NOT NULL DEFAULT 'yedi',
                        designer_id TEXT NOT NULL,
                        title TEXT NOT NULL,
                        description TEXT NOT NULL,
                        price_krw INTEGER NOT NULL,
                        category INTEGER NOT NULL,
                        like_count INTEGER NOT NULL DEFAULT 0 CHECK (like_count >= 0),
                        created_at_ms INTEGER NOT NULL,
                        updated_at_ms INTEGER NOT NULL
                    );
                    -- Feeds: newest first by (created_at_ms, id), everyone's, one designer's, one category's.
                    CREATE INDEX post_by_time ON post(created_at_ms DESC, id DESC);
                    CREATE INDEX post_by_designer ON post(designer_id, created_at_ms DESC, id DESC);
                    CREATE INDEX post_by_category ON post(category, created_at_ms DESC, id DESC);
                    CREATE TABLE post_image (
                        post_id TEXT NOT NULL REFERENCES post(id) ON DELETE CASCADE,
                        position INTEGER NOT NULL,
                        image_id TEXT NOT NULL REFERENCES image(id),
                        PRIMARY KEY (post_id, position)
                    );
                    CREATE INDEX post_image_by_image ON post_image(image_id);
                    CREATE TABLE post_like (
                        post_id TEXT NOT NULL REFERENCES post(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL,
                        liked_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (post_id, user_id)
                    );
                    CREATE INDEX post_like_by_user ON post_like(user_id, liked_at_ms DESC, post_id DESC);

                    CREATE TABLE review (
                        id TEXT PRIMARY KEY,
                        app TEXT NOT NULL DEFAULT 'yedi',
                        reservation_id TEXT NOT NULL UNIQUE,
                        designer_id TEXT NOT NULL,
                        customer_id TEXT NOT NULL,
                        score INTEGER NOT NULL CHECK (score BETWEEN 1 AND 5),
                        text TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX review_by_designer ON review(designer_id, created_at_ms DESC, id DESC);
                    CREATE INDEX review_by_customer ON review(customer_id, created_at_ms DESC, id DESC);
                    CREATE TABLE review_image (
                        review_id TEXT NOT NULL REFERENCES review(id) ON DELETE CASCADE,
                        position INTEGER NOT NULL,
                        image_id TEXT NOT NULL REFERENCES image(id),
                        PRIMARY KEY (review_id, position)
                    );
                    CREATE INDEX review_image_by_image ON review_image(image_id);
                    CREATE TABLE review_keyword (
                        review_id TEXT NOT NULL REFERENCES review(id) ON DELETE CASCADE,
                        position INTEGER NOT NULL,
                        keyword INTEGER NOT NULL,
                        PRIMARY KEY (review_id, keyword)
                    );
                    -- A designer's summary, written in the same transaction as the reviews it counts.
                    CREATE TABLE review_summary (
                        designer_id TEXT PRIMARY KEY,
                        review_count INTEGER NOT NULL CHECK (review_count >= 0),
                        score_total INTEGER NOT NULL CHECK (score_total >= 0)
                    );
                    CREATE TABLE review_keyword_count (
                        designer_id TEXT NOT NULL REFERENCES review_summary(designer_id) ON DELETE CASCADE,
                        keyword INTEGER NOT NULL,
                        count INTEGER NOT NULL CHECK (count > 0),
                        PRIMARY KEY (designer_id, keyword)
                    );
                    """
            )
        }
        // Issue 24: images ChatService's messages use are pinned (it asks `GetImageRefs`); collection of
        // unreferenced images goes by creation time. Every image that exists before this migration is
        // pinned: the chat messages already sent with one never asked, and must not lose it.
        migrator.registerMigration("content-2") { db in
            try db.execute(
                sql: """
                    ALTER TABLE image ADD COLUMN pinned_at_ms INTEGER;
                    UPDATE image SET pinned_at_ms = created_at_ms;
                    CREATE INDEX image_by_time ON image(created_at_ms);
                    """)
        }
        // Issue 26, moderation: operators hide posts and reviews (kept, but in no list and no summary)
        // and feature posts (the FEATURED feed, newest featuring first).
        migrator.registerMigration("content-3-moderation") { db in
            try db.execute(
                sql: """
                    ALTER TABLE post ADD COLUMN hidden_at_ms INTEGER;
                    ALTER TABLE post ADD COLUMN featured_at_ms INTEGER;
                    CREATE INDEX post_featured ON post(featured_at_ms DESC, id DESC)
                        WHERE featured_at_ms IS NOT NULL AND hidden_at_ms IS NULL;
                    ALTER TABLE review ADD COLUMN hidden_at_ms INTEGER;
                    """)
        }
        // Issue 27: the RECOMMENDED feed counts the likes of a recent window.
        migrator.registerMigration("content-4-likes-by-time") { db in
            try db.execute(sql: "CREATE INDEX post_like_by_time ON post_like(liked_at_ms)")
        }
        // Issue 26: each image's resized JPEGs, content-addressed blobs in <data>/image-variants/, served by
        // URL (ImageServer/). Found by their names when a URL asks for one, so indexed; NULL for images
        // uploaded before (they have no URL).
        migrator.registerMigration("content-5-image-variants") { db in
            try db.execute(
                sql: """
                    ALTER TABLE image ADD COLUMN large_sha256 TEXT;
                    ALTER TABLE image ADD COLUMN thumbnail_sha256 TEXT;
                    CREATE INDEX image_by_large ON image(large_sha256);
                    CREATE INDEX image_by_thumbnail ON image(thumbnail_sha256);
                    """)
        }
        // Issue 26, apps as tenants: images (which every app uploads) and likes carry their app as posts and
        // reviews already did; rows from before belong to YeDi, the only app there was.
        migrator.registerMigration("content-6-apps") { db in
            try db.execute(
                sql: """
                    ALTER TABLE image ADD COLUMN app TEXT NOT NULL DEFAULT 'yedi';
                    ALTER TABLE post_like ADD COLUMN app TEXT NOT NULL DEFAULT 'yedi';
                    """)
        }
    }
}
