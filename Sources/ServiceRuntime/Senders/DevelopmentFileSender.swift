import Foundation
import YediProto

/// Mail, SMS and push that never leave the machine: each message is a JSON file in a folder of the
/// service's data folder (`sent-mail`, `sent-sms`, `sent-push`; see `OutsideMessageKind`), where a person
/// trying the system reads the sign-up code (`yedi-probe outbox-messages --kind mail|sms|push` lists
/// them). One type for the three kinds, so the file format and its reader cannot drift apart: register
/// one instance per kind, each with its own folder.
///
/// The file is named by the outbox job, so a retried job rewrites its own file instead of adding a
/// second message. Works offline; the default until a real provider is configured.
public struct DevelopmentFileSender: MailSender, SmsSender, PushSender {
    public let folder: URL
    private let clock: any WallClock

    public init(folder: URL, clock: any WallClock) {
        self.folder = folder
        self.clock = clock
    }

    /// The sender of `kind` for a service: its folder (`<data>/sent-<kind>`) made if missing.
    public init(_ kind: OutsideMessageKind, in env: ServiceEnvironment) throws {
        self.init(folder: try env.dataFolder(kind.developmentFolder), clock: env.clock)
    }

    public func send(_ mail: YediRuntime.MailMessage, jobID: String) async throws {
        try write(
            SentMessage(
                id: jobID, kind: .mail, to: mail.to, subject: mail.subject, text: mail.text,
                template: mail.template, values: Self.values(mail.values), sentAtMs: clock.nowMilliseconds))
    }

    public func send(_ sms: YediRuntime.SmsMessage, jobID: String) async throws {
        try write(
            SentMessage(
                id: jobID, kind: .sms, to: sms.to, subject: "", text: sms.text, template: sms.template,
                values: Self.values(sms.values), sentAtMs: clock.nowMilliseconds))
    }

    public func send(_ push: YediRuntime.PushMessage, jobID: String) async throws {
        try write(
            SentMessage(
                id: jobID, kind: .push, to: push.deviceToken, subject: push.title, text: push.body,
                template: push.template, values: Self.values(push.values), sentAtMs: clock.nowMilliseconds))
    }

    private static func values(_ pairs: [YediRuntime.MailValue]) -> [String: String] {
        Dictionary(pairs.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    private func write(_ message: SentMessage) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let name = message.id.unicodeScalars.map {
            CharacterSet.alphanumerics.contains($0) || $0 == "-" ? Character($0) : "_"
        }
        try encoder.encode(message).write(
            to: folder.appendingPathComponent(String(name) + ".json"), options: .atomic)
    }

    /// Removes the messages in `folder` sent to any of `recipients` (an address, a number, a device
    /// token) or carrying one of `mentions` as a value (a push naming a deleted user): a deleted account's
    /// codes and notices do not outlive it in development either. Answers how many files went.
    @discardableResult
    public static func forget(_ recipients: Set<String>, mentioning mentions: Set<String> = [], in folder: URL) -> Int {
        guard !recipients.isEmpty || !mentions.isEmpty,
            let files = try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        else { return 0 }
        let decoder = JSONDecoder()
        var removed = 0
        for file in files where file.pathExtension == "json" {
            guard let data = try? Data(contentsOf: file),
                let message = try? decoder.decode(SentMessage.self, from: data),
                recipients.contains(message.to) || message.values.values.contains(where: mentions.contains)
            else { continue }
            if (try? FileManager.default.removeItem(at: file)) != nil { removed += 1 }
        }
        return removed
    }

    /// Every message in `folder`, oldest first.
    public static func messages(in folder: URL) throws -> [SentMessage] {
        let decoder = JSONDecoder()
        return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }
            .compactMap { try? decoder.decode(SentMessage.self, from: Data(contentsOf: $0)) }
            .sorted { ($0.sentAtMs, $0.id) < ($1.sentAtMs, $1.id) }
    }
}
