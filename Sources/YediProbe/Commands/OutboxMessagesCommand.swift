import ArgumentParser
import Foundation

/// `yedi-probe outbox-messages`: reads the messages AccountService's development senders wrote (one JSON
/// file per message in `<account data>/sent-mail`, `sent-sms` or `sent-push`), so a person trying the
/// system gets a sign-up code without a mail server or a phone. `sent-mail` is its old name (scripts and
/// the docs use it), with mail the default kind.
struct OutboxMessagesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox-messages",
        abstract: "Lists the mail, SMS or push a development AccountService sent (sign-up codes), or prints one value.",
        discussion: """
            Prints each matching message as one line of JSON, oldest first; with --value, only that value \
            of the newest match (for scripts: CODE=$(yedi-probe outbox-messages --to a@b.kr --value code)). \
            Waits up to --wait seconds for a match (the outbox sends just after the commit). Exits 9 when \
            nothing matches. `sent-mail` is the same command.
            """,
        aliases: ["sent-mail"]
    )

    @Option(help: ArgumentHelp("mail, sms or push.", valueName: "kind"))
    var kind: String = "mail"

    @Option(
        help: ArgumentHelp(
            "The folder (default: data/account/sent-<kind> beside the dev PKI's deploy/, as deploy/start.sh makes it).",
            valueName: "folder"))
    var folder: String?

    @Option(help: ArgumentHelp("Only messages to this address, number (+8210…) or device token.", valueName: "to"))
    var to: String?

    @Option(help: ArgumentHelp("Only the mail of this sign-up (SignUp's verificationId).", valueName: "id"))
    var verificationId: String?

    @Option(help: ArgumentHelp("Print only this value of the newest match (code, verification_id).", valueName: "name"))
    var value: String?

    @Option(help: "Seconds to wait for a matching message.")
    var wait: Double = 10

    func validate() throws {
        guard SentMessageFolder.kinds.contains(kind) else {
            throw ValidationError("--kind must be one of \(SentMessageFolder.kinds.joined(separator: ", "))")
        }
    }

    func run() async throws {
        let messages = SentMessageFolder(
            folder: try folder.map { URL(fileURLWithPath: $0) } ?? SentMessageFolder.devFolder(kind: kind))
        let matches = try await messages.waitForMessages(
            to: to, verificationId: verificationId, wait: .seconds(min(max(0, wait), 366 * 86_400)))
        guard let newest = matches.last else {
            throw ProbeError(
                "yedi-probe: no \(kind) matches in \(messages.folder.path)", exitCode: ExitStatus.noSuchField)
        }
        if let value {
            guard let found = newest.values?[value] else {
                throw ProbeError("yedi-probe: the newest match has no value \(value)", exitCode: ExitStatus.noSuchField)
            }
            Output.line(found)
            return
        }
        for message in matches {
            let line = try String(
                decoding: JSONSerialization.data(
                    withJSONObject: [
                        "id": message.id, "kind": message.kind ?? "mail", "to": message.to,
                        "subject": message.subject ?? "", "text": message.text, "template": message.template ?? "",
                        "values": message.values ?? [:], "sentAtMs": message.sentAtMs,
                    ] as [String: Any], options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
            Output.line(line)
        }
    }
}
