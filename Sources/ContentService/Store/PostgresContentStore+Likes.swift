import PostgresNIO
import RPCAccess
import ServiceRuntime

/// Likes: the `post_like` row is the fact, `post.like_count` follows it in the same transaction, moved
/// only by a row this transaction inserted or deleted (`RETURNING`), so two likes of one member at once
/// count once and likes of many members at once each count (the `UPDATE` of the count waits for the
/// other's commit and adds to what it left).
extension PostgresContentStore {
    func like(postID: String, userID: String, app: AppID, now: Int64) async throws -> Int64 {
        try await postgres.write { tx in
            // FOR KEY SHARE: the post is not deleted between this check and the like's insert.
            guard
                try await !tx.query(
                    """
                    SELECT 1 FROM post WHERE id = \(postID) AND app = \(app.rawValue) AND hidden_at_ms IS NULL
                    FOR KEY SHARE
                    """
                ).isEmpty
            else { throw ContentStoreError.notFound }
            let inserted = try await tx.query(
                """
                INSERT INTO post_like (post_id, user_id, app, liked_at_ms)
                VALUES (\(postID), \(userID), \(app.rawValue), \(now))
                ON CONFLICT (post_id, user_id) DO NOTHING RETURNING 1
                """)
            return try await Self.moveLikeCount(postID, by: inserted.isEmpty ? 0 : 1, tx)
        }
    }

    func unlike(postID: String, userID: String, app: AppID) async throws -> Int64 {
        try await postgres.write { tx in
            guard
                try await !tx.query(
                    "SELECT 1 FROM post WHERE id = \(postID) AND app = \(app.rawValue) FOR KEY SHARE"
                ).isEmpty
            else { throw ContentStoreError.notFound }
            let deleted = try await tx.query(
                "DELETE FROM post_like WHERE post_id = \(postID) AND user_id = \(userID) RETURNING 1")
            return try await Self.moveLikeCount(postID, by: deleted.isEmpty ? 0 : -1, tx)
        }
    }

    /// One statement: no transaction around it.
    func likedPostIDs(userID: String, among postIDs: [String]) async throws -> Set<String> {
        guard !postIDs.isEmpty else { return [] }
        return try await postgres.read { connection in
            var liked = Set<String>()
            for try await id in try await connection.query(
                "SELECT post_id FROM post_like WHERE user_id = \(userID) AND post_id = ANY(\(postIDs))",
                logger: Self.logger
            ).decode(String.self) {
                liked.insert(id)
            }
            return liked
        }
    }

    /// The page and its photos in one statement (`postsWithPhotos`).
    func likedPosts(userID: String, app: AppID, after position: ListPosition?, limit: Int) async throws -> [(
        PostRecord, ListPosition
    )] {
        try await Self.postsWithPhotos(
            """
            WITH page AS (
                SELECT post.*, post_like.liked_at_ms AS liked_at FROM post_like
                JOIN post ON post.id = post_like.post_id
                WHERE post_like.user_id = \(userID) AND post_like.app = \(app.rawValue) AND post.hidden_at_ms IS NULL
                    AND (\(position?.key)::bigint IS NULL
                        OR (post_like.liked_at_ms, post_like.post_id) < (\(position?.key), \(position?.id)))
                ORDER BY post_like.liked_at_ms DESC, post_like.post_id DESC LIMIT \(limit)
            )
            \(unescaped: Self.postsWithPhotosTail(order: "page.liked_at DESC, page.id DESC"))
            """, postgres, and: "liked_at"
        ).map { ($0.post, ListPosition(key: $0.value, id: $0.post.id)) }
    }

    /// Adds `delta` to the post's count (the row then locked to the commit) and answers the count.
    private static func moveLikeCount(_ postID: String, by delta: Int64, _ tx: PostgresTransaction) async throws
        -> Int64
    {
        let rows =
            delta == 0
            ? try await tx.query("SELECT like_count FROM post WHERE id = \(postID)")
            : try await tx.query(
                "UPDATE post SET like_count = like_count + \(delta) WHERE id = \(postID) RETURNING like_count")
        return try rows.first?.decode(Int64.self) ?? 0
    }
}
