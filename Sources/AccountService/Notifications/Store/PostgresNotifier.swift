import Foundation
import PostgresNIO
import RPCAccess
import ServiceRuntime
import YediProto

/// `Notifier` inside a PostgreSQL transaction: the same inbox row, the same trimming to `kept` and the
/// same push jobs (one per device of the user in that app, in registration order), written by the
/// change's own transaction.
struct PostgresNotifier: Sendable {
    let outbox: Outbox
    let ids: any IDGenerator
    let clock: any WallClock
    /// Notifications kept per user and app (quota `notifications.kept`): a new one drops the oldest.
    let kept: Int

    /// The PostgreSQL twin of a SQLite store's notifier (same outbox, ids, clock and quota).
    init(_ notifier: Notifier) {
        self.init(outbox: notifier.outbox, ids: notifier.ids, clock: notifier.clock, kept: notifier.kept)
    }

    init(outbox: Outbox, ids: any IDGenerator, clock: any WallClock, kept: Int) {
        self.outbox = outbox
        self.ids = ids
        self.clock = clock
        self.kept = kept
    }

    /// Writes `content` for `userID` in `app` (unless it is push-only) and queues its pushes, in `tx`.
    /// Answers the notification's id, or nil (nothing written) when there is no such user in `app`.
    @discardableResult
    func notify(userID: String, app: AppID, _ content: NotificationContent, in tx: PostgresTransaction) async throws
        -> String?
    {
        // Locked from the check on: a deletion committing meanwhile makes this wait and answer nil, not fail
        // the insert; and `FOR NO KEY UPDATE` (not only the foreign key's share lock) makes two notifies of
        // one user take turns, so each trim sees the other's row and the inbox keeps exactly `kept`.
        guard
            !(try await tx.query(
                "SELECT 1 FROM app_user WHERE id = \(userID) AND app = \(app.rawValue) FOR NO KEY UPDATE")).isEmpty
        else { return nil }
        let id = ids.next()
        if !content.pushOnly {
            let data = try Notifier.encode(content.data)
            _ = try await tx.query(
                """
                INSERT INTO notification (id, user_id, app, kind, title, body, data, created_at_ms)
                VALUES (\(id), \(userID), \(app.rawValue), \(content.kind), \(content.title), \(content.body),
                        \(data), \(clock.nowMilliseconds))
                """)
            _ = try await tx.query(
                """
                DELETE FROM notification WHERE user_id = \(userID) AND app = \(app.rawValue) AND seq <= (
                    SELECT seq FROM notification WHERE user_id = \(userID) AND app = \(app.rawValue)
                    ORDER BY seq DESC LIMIT 1 OFFSET \(kept))
                """)
        }
        let tokens = try await tx.query(
            "SELECT token FROM device WHERE user_id = \(userID) AND app = \(app.rawValue) ORDER BY seq"
        ).map { try $0.decode(String.self) }
        let values =
            content.data.map { YediRuntime.MailValue(name: $0.key, value: $0.value) }
            + [YediRuntime.MailValue(name: "notification_id", value: id)]
        for token in tokens {
            _ = try await outbox.enqueue(
                in: tx,
                push: YediRuntime.PushMessage(
                    deviceToken: token, title: content.title, body: content.body, template: content.kind,
                    values: values))
        }
        return id
    }
}
