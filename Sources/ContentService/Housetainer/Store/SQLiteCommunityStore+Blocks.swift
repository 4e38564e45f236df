import GRDB
import RPCAccess

/// Blocks, and what a purged member leaves behind.
extension SQLiteCommunityStore {
    func block(_ memberID: String, reader: CommunityReader, now: Int64) async throws -> Bool {
        try await database.write { db in
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO housetainer_block (blocker_id, blocked_id, app, created_at_ms)
                    VALUES (?, ?, ?, ?)
                    """,
                arguments: [reader.id, memberID, reader.app.rawValue, now])
            return db.changesCount == 1
        }
    }

    func unblock(_ memberID: String, reader: CommunityReader) async throws -> Bool {
        try await database.write { db in
            try db.execute(
                sql: "DELETE FROM housetainer_block WHERE blocker_id = ? AND blocked_id = ?",
                arguments: [reader.id, memberID])
            return db.changesCount == 1
        }
    }

    /// Everything of `userID` in the community, inside the purge's transaction: their events and houses
    /// (with their images' places, comments, bookmarks and notifications), their comments elsewhere (with their
    /// notifications), bookmarks, notifications to or from them, blocks both ways. The images themselves
    /// go with the purge of the user's images.
    static func forget(_ userID: String, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM housetainer_event WHERE owner_id = ?", arguments: [userID])
        try db.execute(sql: "DELETE FROM housetainer_house WHERE owner_id = ?", arguments: [userID])
        try db.execute(sql: "DELETE FROM housetainer_comment WHERE writer_id = ?", arguments: [userID])
        try db.execute(sql: "DELETE FROM housetainer_bookmark WHERE member_id = ?", arguments: [userID])
        try db.execute(
            sql: "DELETE FROM housetainer_notification WHERE recipient_id = ? OR actor_id = ?",
            arguments: [userID, userID])
        try db.execute(
            sql: "DELETE FROM housetainer_block WHERE blocker_id = ? OR blocked_id = ?", arguments: [userID, userID])
    }
}
