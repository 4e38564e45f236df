import PostgresNIO
import RPCAccess
import ServiceRuntime

/// The RECOMMENDED feed's ranking, in one query: the likes of the window before the snapshot, each weighed
/// by the first of the policy's steps (youngest first) it is younger than, summed per post. The steps go
/// as two array binds (thresholds and weights), so the statement's text is the same for every policy.
extension PostgresContentStore {
    func recommendedPosts(
        app: AppID, category: Int?, policy: RecommendationPolicy, snapshotAt: Int64,
        after position: PagePosition<Int64>?,
        limit: Int
    ) async throws -> [(post: PostRecord, score: Int64)] {
        let steps = policy.steps.sorted { $0.withinMilliseconds < $1.withinMilliseconds }
        let thresholds = steps.map { snapshotAt - $0.withinMilliseconds }
        let weights = steps.map(\.weight)
        // The page and its photos in one statement (`postsWithPhotos`).
        return try await Self.postsWithPhotos(
            """
            WITH page AS (
                SELECT post.*, ranked.score AS score FROM (
                    SELECT post_id, sum(COALESCE((
                        SELECT step.weight FROM unnest(\(thresholds)::bigint[], \(weights)::bigint[])
                            WITH ORDINALITY AS step(after_ms, weight, rank)
                        WHERE post_like.liked_at_ms > step.after_ms ORDER BY step.rank LIMIT 1
                    ), 0))::bigint AS score
                    FROM post_like
                    WHERE post_like.app = \(app.rawValue) AND liked_at_ms > \(snapshotAt - policy.windowMilliseconds)
                        AND liked_at_ms <= \(snapshotAt)
                    GROUP BY post_id
                ) AS ranked JOIN post ON post.id = ranked.post_id
                WHERE post.hidden_at_ms IS NULL AND post.app = \(app.rawValue)
                    AND (\(category)::bigint IS NULL OR post.category = \(category))
                    AND (\(position?.key)::bigint IS NULL OR (ranked.score, post.id) < (\(position?.key), \(position?.id)))
                ORDER BY ranked.score DESC, post.id DESC LIMIT \(limit)
            )
            \(unescaped: Self.postsWithPhotosTail(order: "page.score DESC, page.id DESC"))
            """, postgres, and: "score"
        ).map { (post: $0.post, score: $0.value) }
    }
}
