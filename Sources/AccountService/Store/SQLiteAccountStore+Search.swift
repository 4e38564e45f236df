import Foundation
import GRDB
import RPCCore
import ServiceRuntime
import YediProto

/// Designer search (FTS5 trigram) and each user's recent searches.
extension SQLiteAccountStore {
    // MARK: Search

    func searchDesigners(query: String, after position: ListPosition?, limit: Int) async throws -> [(
        DesignerSummaryRecord, ListPosition
    )] {
        try await database.read { db in
            let needle = query.lowercased()
            // Trigrams need three characters; shorter queries scan the (small) designer table instead.
            let candidates =
                needle.count >= 3
                ? "SELECT designer.user_id FROM designer_search JOIN designer ON designer.rowid = designer_search.rowid WHERE designer_search MATCH :phrase"
                : """
                SELECT designer.user_id FROM designer JOIN user ON user.id = designer.user_id
                WHERE instr(lower(user.name), :needle) > 0 OR instr(lower(designer.shop_name), :needle) > 0
                    OR instr(lower(designer.district), :needle) > 0
                """
            var bucketAfter: Int?
            var nameAfter: String?
            if let position, let separator = position.key.firstIndex(of: "|"),
                let bucket = Int(position.key[..<separator])
            {
                bucketAfter = bucket
                nameAfter = String(position.key[position.key.index(after: separator)...])
            }
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM (
                        SELECT user.*, designer.rank, designer.shop_name, designer.district, designer.follower_count,
                            CASE WHEN lower(user.name) = :needle THEN 0
                                 WHEN substr(lower(user.name), 1, length(:needle)) = :needle THEN 1
                                 WHEN instr(lower(user.name), :needle) > 0 THEN 2
                                 ELSE 3 END AS bucket
                        FROM designer JOIN user ON user.id = designer.user_id
                        WHERE designer.user_id IN (\(candidates))
                    )
                    WHERE :bucket IS NULL OR (bucket, name, id) > (:bucket, :name, :id)
                    ORDER BY bucket, name, id
                    LIMIT :limit
                    """,
                arguments: [
                    "needle": needle, "phrase": "\"" + needle.replacingOccurrences(of: "\"", with: "\"\"") + "\"",
                    "bucket": bucketAfter, "name": nameAfter, "id": position?.id, "limit": limit,
                ])
            return try rows.map { row in
                let bucket: Int = row["bucket"]
                let name: String = row["name"]
                return (try Self.summary(row), ListPosition(key: "\(bucket)|\(name)", id: row["id"]))
            }
        }
    }

    // MARK: Recent searches

    func recordRecentSearch(
        userID: String, kind: RecentSearchKind, value: String, id: String, now: Int64, keep: Int
    ) async throws -> [RecentSearchRecord] {
        try await database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO recent_search (id, user_id, kind, value, searched_at_ms) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (user_id, kind, value) DO UPDATE SET searched_at_ms = excluded.searched_at_ms
                    """,
                arguments: [id, userID, kind.rawValue, value, now])
            try db.execute(
                sql: """
                    DELETE FROM recent_search WHERE user_id = ? AND id NOT IN (
                        SELECT id FROM recent_search WHERE user_id = ? ORDER BY searched_at_ms DESC, rowid DESC LIMIT ?)
                    """,
                arguments: [userID, userID, keep])
            return try Self.recentSearches(userID, db)
        }
    }

    func recentSearches(userID: String) async throws -> [RecentSearchRecord] {
        try await database.read { db in try Self.recentSearches(userID, db) }
    }

    func deleteRecentSearches(userID: String, id: String?) async throws -> [RecentSearchRecord] {
        try await database.write { db in
            if let id {
                try db.execute(sql: "DELETE FROM recent_search WHERE user_id = ? AND id = ?", arguments: [userID, id])
            } else {
                try db.execute(sql: "DELETE FROM recent_search WHERE user_id = ?", arguments: [userID])
            }
            return try Self.recentSearches(userID, db)
        }
    }
}
