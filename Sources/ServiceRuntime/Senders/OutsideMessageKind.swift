/// The kinds of message that leave the system through an outside provider. Each is an outbox destination
/// of its own (`runtime_outbox.peer`, beside the peer services), so a provider that is down delays only
/// its own kind, and has its own development folder.
public enum OutsideMessageKind: String, Sendable, CaseIterable, Codable {
    case mail
    case sms
    case push

    /// The outbox destination name of this kind's jobs.
    public var destination: String { rawValue }

    /// The folder in the service's data folder where `DevelopmentFileSender` writes this kind's messages
    /// (`sent-mail`, `sent-sms`, `sent-push`), and `yedi-probe outbox-messages --kind` reads them.
    public var developmentFolder: String { "sent-\(rawValue)" }
}
