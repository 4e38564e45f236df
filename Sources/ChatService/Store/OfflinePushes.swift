import GRDB
import PostgresNIO
import ServiceRuntime
import YediProto

/// Pushes to a match room's member who has no open stream (issue 28, "Match chat"): a
/// `yedi.account.Notifications/Notify` job on ChatService's outbox, which AccountService turns into an
/// inbox row and one push per registered device (device tokens live with the account). A member with a
/// stream gets the message there and no push.
///
/// Queued by the store in the message's own transaction (`MessageDraft.pushTo`): a message stored is a
/// push queued, and a crash between the two cannot lose the push.
struct OfflinePushes: Sendable {
    let outbox: Outbox

    /// The kind of the inbox row and push.
    static let kind = "slp-chat-message"
    /// The most characters of the text a push shows.
    static let previewCharacters = 100

    /// Queues the push of `message` (whose text is `text`) to each of `recipients` in `db`'s transaction.
    func enqueue(_ message: MessageRecord, text: String, to recipients: [String], app: String, in db: Database)
        throws
    {
        for recipient in recipients {
            try outbox.enqueue(
                in: db, peer: "account", method: YediAccount.Notifications.Method.notify,
                request: Self.notification(of: message, text: text, to: recipient, app: app))
        }
    }

    /// `enqueue(in: Database)` inside a PostgreSQL transaction.
    func enqueue(
        _ message: MessageRecord, text: String, to recipients: [String], app: String, in tx: PostgresTransaction
    ) async throws {
        for recipient in recipients {
            try await outbox.enqueue(
                in: tx, peer: "account", method: YediAccount.Notifications.Method.notify,
                request: Self.notification(of: message, text: text, to: recipient, app: app))
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
