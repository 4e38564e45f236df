import ArgumentParser
import ProtoBridge
import YediSync

/// `yedi-probe ledger-check HOST:PORT`: BookingService's `CheckPaymentLedger`, for operators
/// (docs/payments.md, "Ledger"): whether the payment ledger balances and each payment's paid minus
/// refunded is what the ledger, the payment and the provider say. Exits 0 only when everything holds.
struct LedgerCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger-check",
        abstract: "Checks BookingService's payment ledger (operators' certificate; the dev PKI's by default).",
        discussion: """
            Prints the totals and every problem found. Exits 0 when the ledger balances and agrees with \
            every payment (and, unless --no-provider, with the payment provider), 1 otherwise.
            """
    )

    static let checkMethod = "yedi.booking.BookingService/CheckPaymentLedger"

    @Argument(help: ArgumentHelp("BookingService, HOST:PORT.", valueName: "host:port"))
    var address: Address

    @Flag(help: "Check the ledger against the stored payments only; do not ask the provider.")
    var noProvider = false

    @Option(help: "Output format: text (totals and problems) or json (the reply).")
    var format: OutputFormat = .text

    @OptionGroup(title: "Connection Options")
    var connection: ConnectionOptions

    func run() async throws {
        let method = try SchemaCatalog.shared.requireMethod(Self.checkMethod)
        guard let ask = method.input.field(named: "ask_provider") else {
            throw ProbeError("\(Self.checkMethod) has no ask_provider field", exitCode: ExitStatus.unknownName)
        }
        var request = DynamicMessage(schema: method.input)
        request.set(.bool(!noProvider), forField: ask.number)
        // Only the operators' certificate may call it: the dev PKI's, unless another is given.
        var connection = connection
        if connection.certificateFile == nil, connection.keyFile == nil, connection.caFile == nil,
            let certificate = DevPKI.file("operator.pem"), let key = DevPKI.file("operator.key")
        {
            connection.certificateFile = certificate
            connection.keyFile = key
        }
        let format = format
        let verdict = VerdictBox()
        try await Invocation(address: address, method: method, connection: connection).run(request: request) {
            reply throws(ProbeError) in
            let printer = ReplyPrinter(format: .json, emitDefaults: true, oneLine: false)
            let json = try printer.render(reply)
            verdict.set(json.contains("\"balanced\": true"))
            switch format {
            case .json: Output.line(json)
            case .text: Output.line(try ReplyPrinter(format: .text, emitDefaults: true, oneLine: false).render(reply))
            }
        }
        if !verdict.value { throw ExitCode(ExitStatus.notServing) }
    }
}

/// Whether the reply said balanced, handed out of the reply callback.
private final class VerdictBox: Sendable {
    private let box = TSanVisibleMutex(false)

    func set(_ value: Bool) { box.withLock { $0 = value } }
    var value: Bool { box.withLock { $0 } }
}
