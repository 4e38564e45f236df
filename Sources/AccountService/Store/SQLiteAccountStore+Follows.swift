import Foundation
import GRDB
import RPCCore
import ServiceRuntime
import YediProto

/// Follows and the follower counts they change, in one transaction each.
extension SQLiteAccountStore {
    // MARK: Follows

    func follow(customerID: String, designerID: String, now: Int64) async throws -> Int64 {
        try await database.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM designer WHERE user_id = ?", arguments: [designerID]) != nil
            else { throw AccountStoreError.notFound }
            try db.execute(
                sql: "INSERT OR IGNORE INTO follow (customer_id, designer_id, followed_at_ms) VALUES (?, ?, ?)",
                arguments: [customerID, designerID, now])
            if db.changesCount == 1 {
                try db.execute(
                    sql: "UPDATE designer SET follower_count = follower_count + 1 WHERE user_id = ?",
                    arguments: [designerID])
            }
            return try Self.followerCount(designerID, db)
        }
    }

    func unfollow(customerID: String, designerID: String) async throws -> Int64 {
        try await database.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM designer WHERE user_id = ?", arguments: [designerID]) != nil
            else { throw AccountStoreError.notFound }
            try db.execute(
                sql: "DELETE FROM follow WHERE customer_id = ? AND designer_id = ?",
                arguments: [customerID, designerID])
            if db.changesCount == 1 {
                try db.execute(
                    sql: "UPDATE designer SET follower_count = follower_count - 1 WHERE user_id = ?",
                    arguments: [designerID])
            }
            return try Self.followerCount(designerID, db)
        }
    }

    func following(customerID: String, after position: ListPosition?, limit: Int) async throws -> [(
        DesignerSummaryRecord, ListPosition
    )] {
        try await database.read { db in
            let after = position.flatMap { Int64($0.key) }
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT user.*, designer.rank, designer.shop_name, designer.district, designer.follower_count,
                        follow.followed_at_ms
                    FROM follow JOIN designer ON designer.user_id = follow.designer_id
                        JOIN user ON user.id = follow.designer_id
                    WHERE follow.customer_id = ?
                        AND (? IS NULL OR (follow.followed_at_ms, follow.designer_id) < (?, ?))
                    ORDER BY follow.followed_at_ms DESC, follow.designer_id DESC
                    LIMIT ?
                    """,
                arguments: [customerID, after, after, position?.id, limit])
            return try rows.map { row in
                (try Self.summary(row), ListPosition(key: String(row["followed_at_ms"] as Int64), id: row["id"]))
            }
        }
    }

    func followedDesignerIDs(userID: String) async throws -> [String] {
        try await database.read { db in
            try String.fetchAll(
                db, sql: "SELECT designer_id FROM follow WHERE customer_id = ? ORDER BY followed_at_ms DESC",
                arguments: [userID])
        }
    }
}
