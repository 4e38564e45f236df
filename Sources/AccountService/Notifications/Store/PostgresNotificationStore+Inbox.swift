import PostgresNIO
import RPCAccess
import ServiceRuntime

/// The inbox on PostgreSQL: notifications written once per delivery, read newest first, marked read.
extension PostgresNotificationStore {
    /// The receipt and its effect commit together: of two replicas given the same job at once, the second
    /// waits on the receipt's key for the first's commit, then finds it taken and writes nothing.
    func notify(
        userID: String, app: AppID, _ content: NotificationContent, delivery: Delivery
    ) async throws -> String? {
        let notifier = self.notifier
        return try await postgres.write { tx in
            guard
                try await ReceiptLedger.isFirstDelivery(
                    in: tx, delivery, nowMilliseconds: notifier.clock.nowMilliseconds)
            else { return nil }
            return try await notifier.notify(userID: userID, app: app, content, in: tx)
        }
    }

    func notifications(userID: String, app: AppID, after position: PagePosition<Int64>?, limit: Int) async throws
        -> [(NotificationRecord, PagePosition<Int64>)]
    {
        try await rows(
            """
            SELECT seq, id, user_id, app, kind, title, body, data, created_at_ms, read_at_ms FROM notification
            WHERE user_id = \(userID) AND app = \(app.rawValue) AND seq < \(position?.key ?? Int64.max)
            ORDER BY seq DESC LIMIT \(limit)
            """
        ).map { row in
            let (seq, id, userID, app, kind, title, body, data, createdAt, readAt) = try row.decode(
                (Int64, String, String, String, String, String, String, String, Int64, Int64?).self)
            let record = NotificationRecord(
                id: id, userID: userID, app: AppID(rawValue: app),
                content: NotificationContent(kind: kind, title: title, body: body, data: Notifier.decode(data)),
                createdAtMilliseconds: createdAt, readAtMilliseconds: readAt)
            return (record, PagePosition(key: seq))
        }
    }

    func unreadCount(userID: String, app: AppID) async throws -> Int64 {
        try await rows(Self.unread(userID: userID, app: app)).first?.decode(Int64.self) ?? 0
    }

    /// Each update is one statement over the rows still unread: marking concurrently on two replicas only
    /// ever sets a read time once per row. The count after is this transaction's view.
    func markRead(userID: String, app: AppID, ids: [String], upToID: String?, now: Int64) async throws -> Int64 {
        try await postgres.write { tx in
            if !ids.isEmpty {
                try await tx.query(
                    """
                    UPDATE notification SET read_at_ms = \(now)
                    WHERE user_id = \(userID) AND app = \(app.rawValue) AND read_at_ms IS NULL AND id = ANY(\(ids))
                    """)
            }
            if let upToID {
                try await tx.query(
                    """
                    UPDATE notification SET read_at_ms = \(now)
                    WHERE user_id = \(userID) AND app = \(app.rawValue) AND read_at_ms IS NULL AND seq <= (
                        SELECT seq FROM notification WHERE id = \(upToID) AND user_id = \(userID) AND app = \(app.rawValue))
                    """)
            }
            return try await tx.query(Self.unread(userID: userID, app: app)).first?.decode(Int64.self) ?? 0
        }
    }

    func pruneNotifications(createdBefore: Int64) async throws -> Int {
        try await postgres.write { tx in
            try await tx.query(
                """
                WITH gone AS (DELETE FROM notification WHERE created_at_ms < \(createdBefore) RETURNING 1)
                SELECT count(*) FROM gone
                """
            ).first?.decode(Int.self) ?? 0
        }
    }

    static func unread(userID: String, app: AppID) -> PostgresQuery {
        """
        SELECT count(*) FROM notification WHERE user_id = \(userID) AND app = \(app.rawValue) AND read_at_ms IS NULL
        """
    }
}
