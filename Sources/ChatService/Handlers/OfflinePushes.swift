import ServiceRuntime
import YediProto

/// Pushes to a match room's member who has no open stream (issue 28, "Match chat"): a
/// `yedi.account.Notifications/Notify` job on ChatService's outbox, which AccountService turns into an
/// inbox row and one push per registered device (device tokens live with the account). A member with a
/// stream gets the message there and no push.
///
/// Written after the message's own transaction: the message is never lost (it is stored and caught up by
/// sequence), but a crash between the two commits loses that one push (decision: a push is a hint).
struct OfflinePushes: Sendable {
    let database: ServiceDatabase
    let outbox: Outbox

    /// The kind of the inbox row and push.
    static let kind = "slp-chat-message"
    /// The most characters of the text a push shows.
    static let previewCharacters = 100

    func enqueue(_ requests: [YediAccount.NotifyRequest]) async throws {
        guard !requests.isEmpty else { return }
        try await database.write { db in
            for request in requests {
                try outbox.enqueue(
                    in: db, peer: "account", method: YediAccount.Notifications.Method.notify, request: request)
            }
        }
    }

    /// What `recipient` is told of `message` in a match room of `app`.
    static func notification(of message: MessageRecord, text: String, to recipient: String, app: String)
        -> YediAccount.NotifyRequest
    {
        YediAccount.NotifyRequest(
            userID: recipient, app: app, kind: kind, title: "새 메시지",
            body: text.count > previewCharacters ? String(text.prefix(previewCharacters)) + "…" : text,
            // No sender id: the room names the partner, and a push outlives nothing it names (deletion).
            data: [.init(key: "room_id", value: message.roomID), .init(key: "seq", value: "\(message.seq)")])
    }
}
