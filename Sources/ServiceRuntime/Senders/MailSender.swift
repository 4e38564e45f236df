import YediProto

/// Sends e-mail. Implementations: `DevelopmentFileSender` (files a person can read) and, in the
/// OutsideSenders target, `SendGridMailSender` (an HTTP mail API).
public protocol MailSender: Sendable {
    /// Sends `mail`; `jobID` is the same on every retry of one outbox job (see `OutboxSender`).
    func send(_ mail: YediRuntime.MailMessage, jobID: String) async throws
}
