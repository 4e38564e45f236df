import ArgumentParser

/// `yedi-probe`: grpcurl for Yedi. It knows every service, method and message from the protobuf-c
/// descriptors compiled into it, so it needs no reflection service on the server.
@main
struct YediProbe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "yedi-probe",
        abstract: "Calls any Yedi RPC from the command line with JSON (no reflection service needed).",
        discussion: """
            Examples:
              yedi-probe list
              yedi-probe describe yedi.echo.Echo/Expand
              yedi-probe call localhost:4433 yedi.echo.Echo/Echo '{"text": "안녕"}'
              yedi-probe call localhost:4433 yedi.echo.Echo/Expand '{"count": 3}'
              yedi-probe health localhost:4433 yedi.echo.Echo
              yedi-probe load localhost:4433 yedi.health.Health/Check --duration 3
              yedi-probe token --user u-1 --role customer
              yedi-probe outbox-messages --to minji@example.com --value code

            TLS: --ca defaults to the dev PKI's ca.pem and --cert/--key to its yedi-probe.pem/.key when \
            those exist (deploy/dev-pki.sh makes them). The dev PKI is $YEDI_PKI, else deploy/pki in the \
            working directory or a parent, else in the repository the probe was built in.

            \(ExitStatus.table)
            """,
        subcommands: [
            ListCommand.self, DescribeCommand.self, CallCommand.self, HealthCommand.self, LoadCommand.self,
            TokenCommand.self, OutboxMessagesCommand.self, LedgerCheckCommand.self,
        ]
    )

    /// ArgumentParser's own `main` prints errors its way and exits 1 or 64; the probe's exit statuses are
    /// a documented interface, so every outcome is mapped here.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as ProbeError {
            Output.errorLine(error.line)
            terminate(error.exitCode)
        } catch let error as ExitCode {
            terminate(error.rawValue)
        } catch {
            guard exitCode(for: error) != .success else {
                // --help, --version: ArgumentParser prints them.
                exit(withError: error)
            }
            Output.errorLine("yedi-probe: \(oneLine(message(for: error)))")
            // The usage lines and the pointer to --help that ArgumentParser adds after its message.
            let full = fullMessage(for: error)
            if let usage = full.range(of: "Usage:") { Output.errorLine(String(full[usage.lowerBound...])) }
            terminate(ExitStatus.usage)
        }
        terminate(ExitStatus.success)
    }
}
