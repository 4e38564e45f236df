import Foundation
import YediProto

/// Mail that never leaves the machine: each message is a JSON file in a folder (`<data>/sent-mail`), where
/// a person trying the system reads the sign-up code (`yedi-probe sent-mail <folder>` lists them).
///
/// The file is named by the outbox job, so a retried job rewrites its own file instead of adding a
/// second message. Works offline; the default until a real mail API is configured.
public struct DevelopmentMailSender: MailSender {
    public let folder: URL
    private let clock: any WallClock

    public init(folder: URL, clock: any WallClock) {
        self.folder = folder
        self.clock = clock
    }

    public func send(_ mail: YediRuntime.MailMessage, jobID: String) async throws {
        let file = SentMail(
            id: jobID, to: mail.to, subject: mail.subject, text: mail.text, template: mail.template,
            values: Dictionary(mail.values.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last }),
            sentAtMs: clock.nowMilliseconds)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let name = jobID.unicodeScalars.map {
            CharacterSet.alphanumerics.contains($0) || $0 == "-" ? Character($0) : "_"
        }
        try encoder.encode(file).write(
            to: folder.appendingPathComponent(String(name) + ".json"), options: .atomic)
    }

    /// Every message in `folder`, oldest first.
    public static func messages(in folder: URL) throws -> [SentMail] {
        let decoder = JSONDecoder()
        return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }
            .compactMap { try? decoder.decode(SentMail.self, from: Data(contentsOf: $0)) }
            .sorted { ($0.sentAtMs, $0.id) < ($1.sentAtMs, $1.id) }
    }
}

/// One message as `DevelopmentMailSender` writes it (the file format `yedi-probe sent-mail` reads).
public struct SentMail: Codable, Sendable, Hashable {
    /// The outbox job that sent it.
    public var id: String
    public var to: String
    public var subject: String
    public var text: String
    public var template: String
    public var values: [String: String]
    /// When the sender wrote it, by the service's clock.
    public var sentAtMs: Int64
}
