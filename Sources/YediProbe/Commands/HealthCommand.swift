import ArgumentParser
import ProtoBridge
import Synchronization

/// `yedi-probe health HOST:PORT [SERVICE]`: `yedi.health.Health/Check`, with the exit status scripts
/// and container probes need: 0 only when SERVING.
struct HealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Asks a server's health service whether it (or one of its services) is serving.",
        discussion: """
            Prints the status (SERVING, NOT_SERVING, ...). Exits 0 only when SERVING, 1 for any other \
            status, and 15 (NOT_FOUND) when the server does not host SERVICE.
            """
    )

    static let checkMethod = "yedi.health.Health/Check"

    @Argument(help: ArgumentHelp("The server, HOST:PORT (one: health is a server's own).", valueName: "host:port"))
    var address: Address

    @Argument(help: ArgumentHelp("A service's full name (default: the whole server).", valueName: "service"))
    var service: String = ""

    @Option(help: "Output format: text (the status) or json (the reply).")
    var format: OutputFormat = .text

    @OptionGroup(title: "Connection Options")
    var connection: ConnectionOptions

    func validate() throws {
        guard address.targets.count == 1 else {
            throw ValidationError("health checks one server: give one HOST:PORT, not \(address)")
        }
    }

    func run() async throws {
        let method = try SchemaCatalog.shared.requireMethod(Self.checkMethod)
        guard let serviceField = method.input.field(named: "service"),
            let statusField = method.output.field(named: "status"), let statuses = statusField.enumSchema
        else {
            throw ProbeError("\(Self.checkMethod) does not have the expected fields", exitCode: ExitStatus.unknownName)
        }
        var request = DynamicMessage(schema: method.input)
        request.set(.string(service), forField: serviceField.number)

        let serving = statuses.value(named: "SERVING_STATUS_SERVING")?.number
        let format = format
        let status = StatusBox()
        try await Invocation(address: address, method: method, connection: connection).run(request: request) {
            reply throws(ProbeError) in
            var number: Int32 = 0
            if case .enumValue(let value) = reply[statusField.number] { number = value }
            status.set(number)
            switch format {
            case .text:
                // SERVING_STATUS_NOT_SERVING → NOT_SERVING, as grpc_health_probe prints it.
                let name = statuses.value(number: number)?.name ?? String(number)
                let prefix = "SERVING_STATUS_"
                Output.line(name.hasPrefix(prefix) ? String(name.dropFirst(prefix.count)) : name)
            case .json:
                Output.line(try ReplyPrinter(format: .json, emitDefaults: true, oneLine: false).render(reply))
            }
        }
        if status.value != serving { throw ExitCode(ExitStatus.notServing) }
    }
}

/// The status the reply carried, handed out of the reply callback.
private final class StatusBox: Sendable {
    private let box = Mutex<Int32?>(nil)

    func set(_ value: Int32) { box.withLock { $0 = value } }

    var value: Int32? { box.withLock { $0 } }
}
