import Logging
import PostgresNIO
import RPCAccess
import RPCCore
import ServiceRuntime

/// `ContentStore` on PostgreSQL, for several replicas of ContentService on one database: images and posts
/// here; likes in `+Likes`, reviews in `+Reviews`, the RECOMMENDED ranking in `+Recommendation`,
/// operators' changes in `+Moderation`, account deletion in `+Purge`, unreferenced images and blobs in
/// `+Collection`, row decoding in `+Rows`.
///
/// Writes run at READ COMMITTED; what SQLite's single writer gave for free is held here method by method:
/// - a count and the change it decides (quotas, review summaries) run under a transaction-level advisory
///   lock named by the writer or the designer (`lock`), so two at once run one after the other;
/// - likes are `ON CONFLICT DO NOTHING RETURNING`, the count moved only by the row that went in or out,
///   in the same transaction;
/// - a photo is held `FOR KEY SHARE` from its check to the commit (`insertPhotos`), and image collection
///   locks rows `FOR UPDATE` before it re-checks them, so no image a post or review takes is deleted;
/// - a blob is deleted only under its advisory lock, which an upload naming it holds until its image row
///   commits (`+Collection`).
/// Reads of several statements (a post with its photos, reviews with photos and keywords) run in one
/// REPEATABLE READ snapshot.
struct PostgresContentStore: ContentStore {
    static let logger = Logger(label: "yedi.content.postgres")
    let postgres: ServicePostgres
    /// Operator actions go to AccountService's log through it, in the transaction that takes them.
    let outbox: Outbox

    // MARK: Images

    func insertImage(_ image: ImageRecord, quotas: UploadQuotas?) async throws {
        let refusal = try await postgres.write { tx -> QuotaExceeded? in
            if let quotas {
                // The owner's uploads one after the other: the sums below then include the previous one.
                try await Self.lock("yedi.content.uploads/" + image.ownerID, tx)
                if let exceeded = try await Self.exceeded(quotas, by: image, tx) {
                    // The blobs are already written: list them, so that they go unless another image uses them.
                    try await Self.listForCollection(image.blobNames, tx)
                    return exceeded
                }
            }
            // Held until the row commits: collection deletes none of these blobs meanwhile (`+Collection`).
            try await Self.lockBlobs(image.blobNames, tx)
            try await tx.query(
                """
                INSERT INTO image (id, owner_id, app, sha256, content_type, width, height, byte_count,
                    created_at_ms, large_sha256, thumbnail_sha256)
                VALUES (\(image.id), \(image.ownerID), \(image.app.rawValue), \(image.sha256), \(image.contentType),
                    \(image.width), \(image.height), \(image.byteCount), \(image.createdAtMilliseconds),
                    \(image.variants?.large), \(image.variants?.thumbnail))
                """)
            // The blobs are wanted again: a pending deletion of them must not run.
            try await tx.query("DELETE FROM image_blob_garbage WHERE sha256 = ANY(\(image.blobNames))")
            return nil
        }
        if let refusal { throw refusal }
    }

    func images(ids: [String]) async throws -> [ImageRecord] {
        guard !ids.isEmpty else { return [] }
        // One statement: no transaction around it (a snapshot's BEGIN and COMMIT would triple a cache hit's
        // round trips on replicas, which revalidate every hit).
        return try await postgres.read { connection in
            try await connection.execute(ContentStatements.ImagesByID.self, ids, logger: Self.logger).map(Self.image)
        }
    }

    // MARK: Posts

    func createPost(_ post: PostRecord, quota: Quota?) async throws {
        try await postgres.write { tx in
            if let quota {
                // The designer's posts one after the other, so the count sees the previous one.
                try await Self.lock("yedi.content.posts/" + post.designerID, tx)
                let dayStart = QuotaDay.start(of: post.createdAtMilliseconds)
                try quota.check(
                    used: try await Self.count(
                        "SELECT count(*) FROM post WHERE designer_id = \(post.designerID) AND created_at_ms >= \(dayStart)",
                        tx))
            }
            try await tx.query(
                """
                INSERT INTO post (id, app, designer_id, title, description, price_krw, category, like_count,
                    created_at_ms, updated_at_ms)
                VALUES (\(post.id), \(post.app.rawValue), \(post.designerID), \(post.title), \(post.description),
                    \(post.priceKRW), \(post.category), 0, \(post.createdAtMilliseconds), \(post.updatedAtMilliseconds))
                """)
            try await Self.insertPhotos(.posts, id: post.id, post.photos, tx)
        }
    }

    func updatePost(_ post: PostRecord) async throws {
        try await postgres.write { tx in
            guard
                try await !tx.query(
                    """
                    UPDATE post SET title = \(post.title), description = \(post.description),
                        price_krw = \(post.priceKRW), category = \(post.category),
                        updated_at_ms = \(post.updatedAtMilliseconds)
                    WHERE id = \(post.id) RETURNING 1
                    """
                ).isEmpty
            else { throw ContentStoreError.notFound }
            try await tx.query("DELETE FROM post_image WHERE post_id = \(post.id)")
            try await Self.insertPhotos(.posts, id: post.id, post.photos, tx)
        }
    }

    func deletePost(id: String) async throws -> Bool {
        try await postgres.write { tx in
            try await !tx.query("DELETE FROM post WHERE id = \(id) RETURNING 1").isEmpty
        }
    }

    func post(id: String) async throws -> PostRecord? {
        try await posts(ids: [id]).first
    }

    func posts(ids: [String]) async throws -> [PostRecord] {
        guard !ids.isEmpty else { return [] }
        return try await Self.postsWithPhotos(
            """
            WITH page AS (SELECT * FROM post WHERE id = ANY(\(ids)))
            \(unescaped: Self.postsWithPhotosTail(order: "page.id"))
            """, postgres)
    }

    func posts(_ filter: PostFilter, after position: ListPosition?, limit: Int) async throws -> [PostRecord] {
        if let designers = filter.designerIDs, designers.isEmpty { return [] }
        // Fixed column names only; every value is a bind. The followed designers are one array bind.
        let order = filter.featuredOnly ? "featured_at_ms" : "created_at_ms"
        return try await Self.postsWithPhotos(
            """
            WITH page AS (
                SELECT * FROM post
                WHERE app = \(filter.app.rawValue) AND hidden_at_ms IS NULL
                    AND (\(!filter.featuredOnly) OR featured_at_ms IS NOT NULL)
                    AND (\(filter.designerIDs == nil) OR designer_id = ANY(\(filter.designerIDs ?? [])))
                    AND (\(filter.category)::bigint IS NULL OR category = \(filter.category))
                    AND (\(position?.key)::bigint IS NULL
                        OR (\(unescaped: order), id) < (\(position?.key), \(position?.id)))
                ORDER BY \(unescaped: order) DESC, id DESC LIMIT \(limit)
            )
            \(unescaped: Self.postsWithPhotosTail(order: "page.\(order) DESC, page.id DESC"))
            """, postgres)
    }
}
