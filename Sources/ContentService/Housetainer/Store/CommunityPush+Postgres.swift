import PostgresNIO
import ServiceRuntime
import YediProto

/// The same push inside a PostgreSQL transaction: the same `Notifications/Notify` job, written by the
/// notification's own transaction (`Outbox.enqueue(in: tx)`), delivered once it commits.
extension CommunityPush {
    func send(
        _ type: CommunityNotificationType, notificationID: Int64, to recipient: String, actor: CommunityReader,
        target: CommentTarget, commentID: String?, in tx: PostgresTransaction
    ) async throws {
        try await outbox.enqueue(
            in: tx, peer: "account", method: YediAccount.Notifications.Method.notify,
            request: Self.request(
                type, notificationID: notificationID, to: recipient, actor: actor, target: target,
                commentID: commentID))
    }

    /// The request `send(in: db)` builds, for the same recipient and notification.
    static func request(
        _ type: CommunityNotificationType, notificationID: Int64, to recipient: String, actor: CommunityReader,
        target: CommentTarget, commentID: String?
    ) -> YediAccount.NotifyRequest {
        let (eventID, houseID) = SQLiteCommunityStore.columns(target)
        let data: [(String, String?)] = [
            ("notification_id", String(notificationID)), ("actor_id", actor.id), ("event_id", eventID),
            ("house_id", houseID), ("comment_id", commentID),
        ]
        return YediAccount.NotifyRequest(
            userID: recipient, app: actor.app.rawValue, kind: kind(type), title: title(type),
            data: data.compactMap { key, value in value.map { YediAccount.NotificationValue(key: key, value: $0) } },
            pushOnly: true)
    }
}
