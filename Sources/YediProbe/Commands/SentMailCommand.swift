import ArgumentParser
import Foundation

/// `yedi-probe sent-mail`: reads the mail AccountService's development mail sender wrote (one JSON file
/// per message in `<account data>/sent-mail`), so a person trying the system gets the sign-up code
/// without a mail server.
struct SentMailCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sent-mail",
        abstract: "Lists the mail a development AccountService sent (sign-up codes), or prints one value.",
        discussion: """
            Prints each matching message as one line of JSON, oldest first; with --value, only that value \
            of the newest match (for scripts: CODE=$(yedi-probe sent-mail --to a@b.kr --value code)). \
            Waits up to --wait seconds for a match (the outbox sends just after the commit). Exits 9 when \
            nothing matches.
            """
    )

    @Option(
        help: ArgumentHelp(
            "The folder (default: data/account/sent-mail beside the dev PKI's deploy/, as deploy/start.sh makes it).",
            valueName: "folder"))
    var folder: String?

    @Option(help: ArgumentHelp("Only mail to this address.", valueName: "address"))
    var to: String?

    @Option(help: ArgumentHelp("Only the mail of this sign-up (SignUp's verificationId).", valueName: "id"))
    var verificationId: String?

    @Option(help: ArgumentHelp("Print only this value of the newest match (code, verification_id).", valueName: "name"))
    var value: String?

    @Option(help: "Seconds to wait for a matching message.")
    var wait: Double = 10

    func run() async throws {
        let mailbox = SentMailbox(folder: try folder.map { URL(fileURLWithPath: $0) } ?? SentMailbox.devFolder())
        let matches = try await mailbox.waitForMessages(
            to: to, verificationId: verificationId, wait: .seconds(min(max(0, wait), 366 * 86_400)))
        guard let newest = matches.last else {
            throw ProbeError("yedi-probe: no mail matches in \(mailbox.folder.path)", exitCode: ExitStatus.noSuchField)
        }
        if let value {
            guard let found = newest.values[value] else {
                throw ProbeError("yedi-probe: the newest match has no value \(value)", exitCode: ExitStatus.noSuchField)
            }
            Output.line(found)
            return
        }
        for message in matches {
            let line = try String(
                decoding: JSONSerialization.data(
                    withJSONObject: [
                        "id": message.id, "to": message.to, "subject": message.subject, "text": message.text,
                        "template": message.template, "values": message.values, "sentAtMs": message.sentAtMs,
                    ] as [String: Any], options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
            Output.line(line)
        }
    }
}
