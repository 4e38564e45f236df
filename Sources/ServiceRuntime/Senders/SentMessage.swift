/// One message as `DevelopmentFileSender` writes it: the file format `yedi-probe outbox-messages` reads
/// (the probe keeps its own decoder of it, so it does not link the runtime).
///
/// The three kinds share the fields: `to` is an address, an E.164 number or a device token; `subject` is
/// a mail's subject or a push's title (empty for SMS); `text` the mail's text, the SMS or the push's body.
public struct SentMessage: Codable, Sendable, Hashable {
    /// The outbox job that sent it.
    public var id: String
    public var kind: OutsideMessageKind
    public var to: String
    public var subject: String
    public var text: String
    public var template: String
    public var values: [String: String]
    /// When the sender wrote it, by the service's clock.
    public var sentAtMs: Int64

    public init(
        id: String, kind: OutsideMessageKind, to: String, subject: String, text: String, template: String,
        values: [String: String], sentAtMs: Int64
    ) {
        self.id = id
        self.kind = kind
        self.to = to
        self.subject = subject
        self.text = text
        self.template = template
        self.values = values
        self.sentAtMs = sentAtMs
    }

    private enum CodingKeys: String, CodingKey {
        case id, kind, to, subject, text, template, values, sentAtMs
    }

    /// Files written before SMS and push existed have no `kind`: they are mail.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        kind = try container.decodeIfPresent(OutsideMessageKind.self, forKey: .kind) ?? .mail
        to = try container.decode(String.self, forKey: .to)
        subject = try container.decodeIfPresent(String.self, forKey: .subject) ?? ""
        text = try container.decode(String.self, forKey: .text)
        template = try container.decodeIfPresent(String.self, forKey: .template) ?? ""
        values = try container.decodeIfPresent([String: String].self, forKey: .values) ?? [:]
        sentAtMs = try container.decode(Int64.self, forKey: .sentAtMs)
    }
}
