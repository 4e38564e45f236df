import Foundation

/// A development sender's folder: AccountService's outside senders, without a provider, write one JSON
/// file per message into `<account data>/sent-mail`, `sent-sms` or `sent-push`, so sign-up codes can be
/// read without a mail server or a phone (`outbox-messages`, and `load --scenario yedi-mix` when it signs
/// its users up).
struct SentMessageFolder: Sendable {
    /// The file format `DevelopmentFileSender` writes (`SentMessage` in ServiceRuntime), read here with its
    /// own decoder so the probe does not link the server runtime (and GRDB). The end-to-end sign-ups
    /// (`YediSystem.signUp`, `LoadMixTests`) read real files through it, so the two cannot drift apart.
    struct Message: Decodable, Sendable {
        var id: String
        /// mail, sms or push; files from before SMS and push have none (mail).
        var kind: String?
        var to: String
        var subject: String?
        var text: String
        var template: String?
        var values: [String: String]?
        var sentAtMs: Int64
    }

    /// The kinds and their folders, as `OutsideMessageKind` names them.
    static let kinds = ["mail", "sms", "push"]

    let folder: URL

    /// data/account/sent-<kind> beside the dev PKI's deploy/, as deploy/start.sh makes it.
    static func devFolder(kind: String = "mail") throws(ProbeError) -> URL {
        guard let pki = DevPKI.directory else {
            throw ProbeError(
                "yedi-probe: no dev PKI found to locate data/ from; pass --folder", exitCode: ExitStatus.usage)
        }
        return URL(fileURLWithPath: pki).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("data/account/sent-\(kind)")
    }

    /// The messages to `to` (any recipient when nil) of the sign-up `verificationId` (any when nil),
    /// oldest first; waits up to `wait` for at least one (the outbox sends just after the commit).
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
                // Addresses compare without case; numbers and device tokens as written.
                (to.map { message.to == $0 || message.to == $0.lowercased() } ?? true)
                    && (verificationId.map { message.values?["verification_id"] == $0 } ?? true)
            }
            .sorted { ($0.sentAtMs, $0.id) < ($1.sentAtMs, $1.id) }
    }
}
