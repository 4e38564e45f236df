import Foundation
import GRDB
import RPCAccess
import ServiceRuntime
import YediProto

/// Notifies a user inside a store transaction: an inbox row and one outbox push job per device of the
/// user in that app, so a caller gets both with one call and neither without the change that caused them
/// (the push is sent after the commit; its job id is the send's idempotency key). AccountService's own
/// stores call it; other services reach it through `Notify` (their outbox, then `SQLiteNotificationStore`).
struct Notifier: Sendable {
    let outbox: Outbox
    let ids: any IDGenerator
    let clock: any WallClock
    /// Notifications kept per user and app (quota `notifications.kept`): a new one drops the oldest.
    let kept: Int

    /// Writes `content` for `userID` in `app` (unless it is push-only) and queues its pushes, in `db`'s
    /// transaction. Answers the notification's id, or nil (nothing written) when there is no such user in
    /// `app`.
    @discardableResult
    func notify(userID: String, app: AppID, _ content: NotificationContent, in db: Database) throws -> String? {
        guard
            try Bool.fetchOne(
                db, sql: "SELECT 1 FROM user WHERE id = ? AND app = ?", arguments: [userID, app.rawValue]) == true
        else { return nil }
        let id = ids.next()
        if !content.pushOnly {
            try db.execute(
                sql: """
                    INSERT INTO notification (id, user_id, app, kind, title, body, data, created_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    id, userID, app.rawValue, content.kind, content.title, content.body,
                    try Self.encode(content.data), clock.nowMilliseconds,
                ])
            try db.execute(
                sql: """
                    DELETE FROM notification WHERE user_id = ? AND app = ? AND seq <= (
                        SELECT seq FROM notification WHERE user_id = ? AND app = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)
                    """,
                arguments: [userID, app.rawValue, userID, app.rawValue, kept])
        }
        let tokens = try String.fetchAll(
            db, sql: "SELECT token FROM device WHERE user_id = ? AND app = ? ORDER BY rowid",
            arguments: [userID, app.rawValue])
        let values =
            content.data.map { YediRuntime.MailValue(name: $0.key, value: $0.value) }
            + [YediRuntime.MailValue(name: "notification_id", value: id)]
        for token in tokens {
            try outbox.enqueue(
                in: db,
                push: YediRuntime.PushMessage(
                    deviceToken: token, title: content.title, body: content.body, template: content.kind,
                    values: values))
        }
        return id
    }

    /// The data pairs as stored: a JSON array of `[key, value]` arrays (order kept).
    static func encode(_ data: [(key: String, value: String)]) throws -> String {
        String(decoding: try JSONEncoder().encode(data.map { [$0.key, $0.value] }), as: UTF8.self)
    }

    static func decode(_ text: String) -> [(key: String, value: String)] {
        let pairs = (try? JSONDecoder().decode([[String]].self, from: Data(text.utf8))) ?? []
        return pairs.compactMap { $0.count == 2 ? (key: $0[0], value: $0[1]) : nil }
    }
}
