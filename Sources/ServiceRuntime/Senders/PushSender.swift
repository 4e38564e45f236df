import YediProto

/// Sends push notifications to one device. Implementations: `DevelopmentFileSender` (files a person can
/// read) and, in the OutsideSenders target, `FCMPushSender` (Firebase Cloud Messaging HTTP v1).
///
/// Called only by the outbox (`Outbox.enqueue(in:push:)`), never by a handler. A sender that learns the
/// device token is dead throws `UndeliverableMessage` with reason `.deadDeviceToken`.
public protocol PushSender: Sendable {
    /// Sends `push`; `jobID` is the same on every retry of one outbox job (see `OutboxSender`).
    func send(_ push: YediRuntime.PushMessage, jobID: String) async throws
}
