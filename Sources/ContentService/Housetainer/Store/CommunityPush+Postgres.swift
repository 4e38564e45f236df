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
}
