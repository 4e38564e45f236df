import Foundation

/// AccountService's development mailbox: its mail sender writes one JSON file per message into
/// `<account data>/sent-mail`, so sign-up codes can be read without a mail server (`sent-mail`, and
/// `load --scenario yedi-mix` when it signs its users up).
struct SentMailbox: Sendable {
    /// The file format `DevelopmentMailSender` writes (`SentMail` in ServiceRuntime), read here with its
    /// own decoder so the probe does not link the server runtime (and GRDB). The end-to-end sign-ups
    /// (`YediSystem.signUp`, `LoadMixTests`) read real files through it, so the two cannot drift apart.
    struct Message: Decodable, Sendable {
        var id: String
        var to: String
        var subject: String
        var text: String
        var template: String
        var values: [String: String]
        var sentAtMs: Int64
    }

    let folder: URL

    /// data/account/sent-mail beside the dev PKI's deploy/, as deploy/start.sh makes it.
    static func devFolder() throws(ProbeError) -> URL {
        guard let pki = DevPKI.directory else {
            throw ProbeError(
                "yedi-probe: no dev PKI found to locate data/ from; pass --folder", exitCode: ExitStatus.usage)
        }
        return URL(fileURLWithPath: pki).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("data/account/sent-mail")
    }

    /// The messages to `to` (any address when nil) of the sign-up `verificationId` (any when nil), oldest
    /// first; waits up to `wait` for at least one (the outbox sends just after the commit).
    func waitForMessages(to: String?, verificationId: String?, wait: Duration) async throws -> [Message] {
        let deadline = ContinuousClock.now + wait
        var matches = try messages(to: to, verificationId: verificationId)
        while matches.isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            matches = try messages(to: to, verificationId: verificationId)
        }
        return matches
    }

    func messages(to: String?, verificationId: String?) throws(ProbeError) -> [Message] {
        let files: [URL]
        do {
            files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        } catch {
            throw ProbeError("yedi-probe: cannot read \(folder.path): \(error)", exitCode: ExitStatus.cannotReadInput)
        }
        return
            files
            .filter { $0.pathExtension == "json" }
            .compactMap { try? JSONDecoder().decode(Message.self, from: Data(contentsOf: $0)) }
            .filter { message in
                (to.map { message.to == $0.lowercased() } ?? true)
                    && (verificationId.map { message.values["verification_id"] == $0 } ?? true)
            }
            .sorted { ($0.sentAtMs, $0.id) < ($1.sentAtMs, $1.id) }
    }
}
