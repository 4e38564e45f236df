import GRDB
import ServiceRuntime
import YediProto

/// The push that goes with a community notification: an outbox job to AccountService's
/// `Notifications/Notify` (push only: the notification itself is ContentService's row), written in the
/// transaction that wrote the notification, delivered once it commits, applied once by its idempotency key.
struct CommunityPush: Sendable {
    let outbox: Outbox

    func send(
        _ type: CommunityNotificationType, notificationID: Int64, to recipient: String, actor: CommunityReader,
        target: CommentTarget, commentID: String?, in db: Database
    ) throws {
        try outbox.enqueue(
            in: db, peer: "account", method: YediAccount.Notifications.Method.notify,
            request: Self.request(
                type, notificationID: notificationID, to: recipient, actor: actor, target: target,
                commentID: commentID))
    }

    /// The `Notifications/Notify` request for one push (push-only: the community keeps its own list), the
    /// same on both engines.
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

    static func kind(_ type: CommunityNotificationType) -> String {
        switch type {
        case .eventBookmarked: "housetainer.event-bookmarked"
        case .eventCommented: "housetainer.event-commented"
        case .bookmarkedEventCommented: "housetainer.bookmarked-event-commented"
        case .houseCommented: "housetainer.house-commented"
        }
    }

    static func title(_ type: CommunityNotificationType) -> String {
        switch type {
        case .eventBookmarked: "내 이벤트를 누군가 북마크했어요"
        case .eventCommented: "내 이벤트에 댓글이 달렸어요"
        case .bookmarkedEventCommented: "북마크한 이벤트에 댓글이 달렸어요"
        case .houseCommented: "내 집에 홈레터가 도착했어요"
        }
    }
}
