import YediProto

/// Sends text messages (SMS). Implementations: `DevelopmentFileSender` (files a person can read, where
/// the phone sign-in code is found offline) and, in the OutsideSenders target, `NHNCloudSmsSender`.
///
/// Called only by the outbox (`Outbox.enqueue(in:sms:)`), never by a handler.
public protocol SmsSender: Sendable {
    /// Sends `sms`; `jobID` is the same on every retry of one outbox job (see `OutboxSender`).
    func send(_ sms: YediRuntime.SmsMessage, jobID: String) async throws
}
