import GRDB
import RPCAccess
import ServiceRuntime

/// The RECOMMENDED feed's ranking, in one query: the likes of the window before the snapshot, weighed by
/// the policy's steps, summed per post.
extension SQLiteContentStore {
    func recommendedPosts(
        app: AppID, category: Int?, policy: RecommendationPolicy, snapshotAt: Int64,
        after position: PagePosition<Int64>?,
        limit: Int
    ) async throws -> [(post: PostRecord, score: Int64)] {
        try await database.read { db in
            var arguments = StatementArguments()
            let weights = policy.steps.sorted { $0.withinMilliseconds < $1.withinMilliseconds }.map { step in
                _ = arguments.append(contentsOf: [snapshotAt - step.withinMilliseconds, step.weight])
                return "WHEN liked_at_ms > ? THEN ?"
            }
            _ = arguments.append(contentsOf: [app.rawValue, snapshotAt - policy.windowMilliseconds, snapshotAt])
            var conditions = ["post.hidden_at_ms IS NULL"]
            conditions.append("post.app = ?")
            _ = arguments.append(contentsOf: [app.rawValue])
            if let category {
                conditions.append("post.category = ?")
                _ = arguments.append(contentsOf: [category])
            }
            if let position {
                conditions.append("(ranked.score < ? OR (ranked.score = ? AND post.id < ?))")
                _ = arguments.append(contentsOf: [position.key, position.key, position.id])
            }
            _ = arguments.append(contentsOf: [limit])
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT post.*, ranked.score AS score FROM (
                        SELECT post_id, SUM(CASE \(weights.joined(separator: " ")) ELSE 0 END) AS score
                        FROM post_like WHERE post_like.app = ? AND liked_at_ms > ? AND liked_at_ms <= ? GROUP BY post_id
                    ) AS ranked JOIN post ON post.id = ranked.post_id
                    WHERE \(conditions.joined(separator: " AND "))
                    ORDER BY ranked.score DESC, post.id DESC LIMIT ?
                    """,
                arguments: arguments)
            let posts = try Self.withPhotos(rows.map(Self.post), db)
            return zip(posts, rows).map { ($0, $1["score"] as Int64) }
        }
    }
}
