import YediProto

/// Sends e-mail. Implementations: `DevelopmentMailSender` (files a person can read); a real mail API
/// adapter comes with the platform issue's senders.
public protocol MailSender: Sendable {
    /// Sends `mail`; `jobID` is the same on every retry of one outbox job (see `OutboxSender`).
    func send(_ mail: YediRuntime.MailMessage, jobID: String) async throws
}

/// The outbox destination of mail jobs: decodes the job's `MailMessage` and hands it to the sender.
struct MailOutboxSender: OutboxSender {
    /// The outbox destination name of mail jobs (in `runtime_outbox.peer`, beside the peer services).
    static let destination = "mail"

    let mail: any MailSender

    func send(payload: [UInt8], jobID: String) async throws {
        try await mail.send(try YediRuntime.MailMessage(serializedBytes: payload), jobID: jobID)
    }
}
