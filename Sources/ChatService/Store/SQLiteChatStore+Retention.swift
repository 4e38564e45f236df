import GRDB
import ServiceRuntime

/// The rooms quota and the pruning of old stream events, apart from the main store file.
extension SQLiteChatStore {
    /// Only a room that does not exist yet counts: the customer's open room of the kind with the
    /// designer is answered whatever the quota.
    static func checkRoomQuota(
        _ quota: Quota, kind: String, customerID: String, designerID: String, now: Int64, _ db: Database
    ) throws {
        let exists =
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT EXISTS (SELECT 1 FROM chat_room WHERE kind = ? AND open_key = ? AND closed_at_ms IS NULL)
                    """,
                arguments: [kind, RoomOpenKey.pair(customerID, designerID)]) ?? false
        guard !exists else { return }
        let today =
            try Int64.fetchOne(
                db, sql: "SELECT COUNT(*) FROM chat_room WHERE opened_by = ? AND created_at_ms >= ?",
                arguments: [customerID, QuotaDay.start(of: now)]) ?? 0
        try quota.check(used: today)
    }

    func prunedThrough(recipientID: String) async throws -> Int64 {
        try await database.read { db in
            try Int64.fetchOne(
                db, sql: "SELECT through_position FROM chat_event_pruned WHERE recipient_id = ?",
                arguments: [recipientID]) ?? 0
        }
    }

    func pruneEvents(createdBefore cutoff: Int64) async throws -> Int {
        try await database.write { db in
            // Walks the primary key from the oldest event to the first one to keep: only what goes is read.
            let firstKept = try Int64.fetchOne(
                db, sql: "SELECT position FROM chat_event WHERE created_at_ms >= ? ORDER BY position LIMIT 1",
                arguments: [cutoff])
            let through =
                try firstKept.map { $0 - 1 } ?? Int64.fetchOne(db, sql: "SELECT MAX(position) FROM chat_event") ?? 0
            try db.execute(
                sql: """
                    INSERT INTO chat_event_pruned (recipient_id, through_position)
                    SELECT recipient_id, MAX(position) FROM chat_event WHERE position <= ? GROUP BY recipient_id
                    ON CONFLICT (recipient_id) DO UPDATE
                        SET through_position = MAX(through_position, excluded.through_position)
                    """, arguments: [through])
            try db.execute(sql: "DELETE FROM chat_event WHERE position <= ?", arguments: [through])
            return db.changesCount
        }
    }
}
