import PostgresNIO
import RPCCore
import ServiceRuntime

/// Designer search (`pg_trgm` indexes on `lower(…)`) and each user's recent searches.
extension PostgresAccountStore {
    // MARK: Search

    /// The same buckets, order and cursors as SQLite's: exact name (0), name starting with the query (1),
    /// name containing it (2), shop name or district containing it (3); then name and id in byte order.
    func searchDesigners(query: String, after position: ListPosition?, limit: Int) async throws -> [(
        DesignerSummaryRecord, ListPosition
    )] {
        let needle = query.lowercased()
        // $1 the lowercased query, $2 the same as a LIKE pattern, $3 the limit, $4…$6 the cursor. The text
        // below is constant: only binds carry values.
        var binds = PostgresBindings()
        binds.append(needle)
        binds.append(Self.containing(needle))
        binds.append(limit)
        // Trigrams need three characters; shorter queries scan the (small) designer table instead. The
        // pattern matches the query literally: its `%`, `_` and `\` are escaped, or `%` would match every
        // designer.
        let candidates =
            needle.count >= 3
            ? """
            SELECT id FROM app_user WHERE lower(name) LIKE $2 ESCAPE '\\'
            UNION
            SELECT user_id FROM designer WHERE lower(shop_name) LIKE $2 ESCAPE '\\' OR lower(district) LIKE $2 ESCAPE '\\'
            """
            : """
            SELECT user_id FROM designer JOIN app_user ON app_user.id = designer.user_id
            WHERE strpos(lower(app_user.name), $1) > 0 OR strpos(lower(designer.shop_name), $1) > 0
                OR strpos(lower(designer.district), $1) > 0
            """
        var after = ""
        if let position, let separator = position.key.firstIndex(of: "|"),
            let bucket = Int(position.key[..<separator])
        {
            binds.append(bucket)
            binds.append(String(position.key[position.key.index(after: separator)...]))
            binds.append(position.id)
            after = #"WHERE (bucket, name COLLATE "C", id COLLATE "C") > ($4, $5, $6)"#
        }
        let query = PostgresQuery(
            unsafeSQL: """
                SELECT * FROM (
                    SELECT app_user.*, designer.rank, designer.shop_name, designer.district, designer.follower_count,
                        CASE WHEN lower(app_user.name) = $1 THEN 0
                             WHEN starts_with(lower(app_user.name), $1) THEN 1
                             WHEN strpos(lower(app_user.name), $1) > 0 THEN 2
                             ELSE 3 END AS bucket
                    FROM designer JOIN app_user ON app_user.id = designer.user_id
                    WHERE designer.user_id IN (\(candidates))
                ) AS hit
                \(after)
                ORDER BY bucket, name COLLATE "C", id COLLATE "C"
                LIMIT $3
                """, binds: binds)
        return try await rows(query).map { row in
            let cells = row.makeRandomAccess()
            let bucket = try cells["bucket"].decode(Int.self)
            let name = try cells["name"].decode(String.self)
            return (
                try Self.summary(row), ListPosition(key: "\(bucket)|\(name)", id: try cells["id"].decode(String.self))
            )
        }
    }

    /// A `LIKE` pattern matching values that contain `text` literally (with `ESCAPE '\'`).
    static func containing(_ text: String) -> String {
        var escaped = "%"
        for character in text {
            if character == "%" || character == "_" || character == "\\" { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped + "%"
    }

    // MARK: Recent searches

    func recordRecentSearch(
        userID: String, kind: RecentSearchKind, value: String, id: String, now: Int64, keep: Int
    ) async throws -> [RecentSearchRecord] {
        try await postgres.write { tx in
            try await tx.query(
                """
                INSERT INTO recent_search (id, user_id, kind, value, searched_at_ms)
                VALUES (\(id), \(userID), \(kind.rawValue), \(value), \(now))
                ON CONFLICT (user_id, kind, value) DO UPDATE SET searched_at_ms = excluded.searched_at_ms
                """)
            try await tx.query(
                """
                DELETE FROM recent_search WHERE user_id = \(userID) AND id NOT IN (
                    SELECT id FROM recent_search WHERE user_id = \(userID)
                    ORDER BY searched_at_ms DESC, seq DESC LIMIT \(keep))
                """)
            return try await Self.recentSearches(userID, tx)
        }
    }

    func recentSearches(userID: String) async throws -> [RecentSearchRecord] {
        try await postgres.snapshot { tx in try await Self.recentSearches(userID, tx) }
    }

    func deleteRecentSearches(userID: String, id: String?) async throws -> [RecentSearchRecord] {
        try await postgres.write { tx in
            if let id {
                try await tx.query("DELETE FROM recent_search WHERE user_id = \(userID) AND id = \(id)")
            } else {
                try await tx.query("DELETE FROM recent_search WHERE user_id = \(userID)")
            }
            return try await Self.recentSearches(userID, tx)
        }
    }
}
