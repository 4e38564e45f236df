import PostgresNIO
import RPCAccess
import ServiceRuntime

/// Blocks, and what a purged member leaves behind.
extension PostgresCommunityStore {
    /// One insert: of two blocks of the same member at once, the second waits and changes nothing.
    func block(_ memberID: String, reader: CommunityReader, now: Int64) async throws -> Bool {
        try await postgres.write { tx in
            try await !tx.query(
                """
                INSERT INTO housetainer_block (blocker_id, blocked_id, app, created_at_ms)
                VALUES (\(reader.id), \(memberID), \(reader.app.rawValue), \(now))
                ON CONFLICT (blocker_id, blocked_id) DO NOTHING
                RETURNING 1
                """
            ).isEmpty
        }
    }

    func unblock(_ memberID: String, reader: CommunityReader) async throws -> Bool {
        try await postgres.write { tx in
            try await !tx.query(
                """
                DELETE FROM housetainer_block WHERE blocker_id = \(reader.id) AND blocked_id = \(memberID) RETURNING 1
                """
            ).isEmpty
        }
    }

    /// Everything of `userID` in the community, inside the purge's transaction, as
    /// `SQLiteCommunityStore.forget`: their events and houses (with what hangs on them), their comments
    /// elsewhere (with their notifications), bookmarks, notifications to or from them, blocks both ways.
    static func forget(_ userID: String, _ tx: PostgresTransaction) async throws {
        try await tx.query("DELETE FROM housetainer_event WHERE owner_id = \(userID)")
        try await tx.query("DELETE FROM housetainer_house WHERE owner_id = \(userID)")
        try await tx.query("DELETE FROM housetainer_comment WHERE writer_id = \(userID)")
        try await tx.query("DELETE FROM housetainer_bookmark WHERE member_id = \(userID)")
        try await tx.query(
            "DELETE FROM housetainer_notification WHERE recipient_id = \(userID) OR actor_id = \(userID)")
        try await tx.query("DELETE FROM housetainer_block WHERE blocker_id = \(userID) OR blocked_id = \(userID)")
    }
}
