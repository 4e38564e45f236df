import PostgresNIO
import RPCCore
import ServiceRuntime

/// Follows and the follower counts they change: the follow row decides (its primary key, `ON CONFLICT DO
/// NOTHING`), and the count moves in the same transaction only when a row was added or removed, so
/// concurrent follows from every replica keep it exact.
extension PostgresAccountStore {
    // MARK: Follows

    func follow(customerID: String, designerID: String, now: Int64) async throws -> Int64 {
        do {
            return try await postgres.write { tx in
                let added = try await tx.query(
                    """
                    INSERT INTO follow (customer_id, designer_id, followed_at_ms)
                    VALUES (\(customerID), \(designerID), \(now))
                    ON CONFLICT (customer_id, designer_id) DO NOTHING RETURNING 1
                    """)
                return try await Self.changeFollowerCount(of: designerID, by: added.isEmpty ? 0 : 1, tx)
            }
        } catch let violation as PostgresConstraintViolation where violation.constraint == "follow_designer_exists" {
            throw AccountStoreError.notFound
        }
    }

    func unfollow(customerID: String, designerID: String) async throws -> Int64 {
        try await postgres.write { tx in
            let removed = try await tx.query(
                "DELETE FROM follow WHERE customer_id = \(customerID) AND designer_id = \(designerID) RETURNING 1")
            return try await Self.changeFollowerCount(of: designerID, by: removed.isEmpty ? 0 : -1, tx)
        }
    }

    /// The designer's follower count after adding `change`; `notFound` if there is no such designer.
    static func changeFollowerCount(of designerID: String, by change: Int64, _ tx: PostgresTransaction) async throws
        -> Int64
    {
        let rows =
            change == 0
            ? try await tx.query("SELECT follower_count FROM designer WHERE user_id = \(designerID)")
            : try await tx.query(
                """
                UPDATE designer SET follower_count = follower_count + \(change) WHERE user_id = \(designerID)
                RETURNING follower_count
                """)
        guard let row = rows.first else { throw AccountStoreError.notFound }
        return try row.decode(Int64.self)
    }

    func following(customerID: String, after position: ListPosition?, limit: Int) async throws -> [(
        DesignerSummaryRecord, ListPosition
    )] {
        let rows: [PostgresRow]
        let select = """
            SELECT app_user.*, designer.rank, designer.shop_name, designer.district, designer.follower_count,
                follow.followed_at_ms
            FROM follow JOIN designer ON designer.user_id = follow.designer_id
                JOIN app_user ON app_user.id = follow.designer_id
            """
        if let position, let after = Int64(position.key) {
            rows = try await self.rows(
                """
                \(unescaped: select)
                WHERE follow.customer_id = \(customerID)
                    AND (follow.followed_at_ms, follow.designer_id) < (\(after), \(position.id))
                ORDER BY follow.followed_at_ms DESC, follow.designer_id DESC
                LIMIT \(limit)
                """)
        } else {
            rows = try await self.rows(
                """
                \(unescaped: select)
                WHERE follow.customer_id = \(customerID)
                ORDER BY follow.followed_at_ms DESC, follow.designer_id DESC
                LIMIT \(limit)
                """)
        }
        return try rows.map { row in
            let cells = row.makeRandomAccess()
            return (
                try Self.summary(row),
                ListPosition(
                    key: String(try cells["followed_at_ms"].decode(Int64.self)), id: try cells["id"].decode(String.self)
                )
            )
        }
    }

    func followedDesignerIDs(userID: String) async throws -> [String] {
        try await rows("SELECT designer_id FROM follow WHERE customer_id = \(userID) ORDER BY followed_at_ms DESC")
            .map { try $0.decode(String.self) }
    }
}
