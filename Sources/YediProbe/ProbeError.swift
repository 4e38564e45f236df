import RPCCore
import RPCTLS

/// The probe's exit statuses: one per kind of failure, so scripts can tell "the server said no" from
/// "my JSON is wrong" from "the certificate is not trusted" without parsing messages.
enum ExitStatus {
    static let success: Int32 = 0
    /// `health`: the server answered, but not SERVING; `ledger-check`: the payment ledger does not hold.
    static let notServing: Int32 = 1
    static let usage: Int32 = 2
    static let tls: Int32 = 3
    static let cannotConnect: Int32 = 4
    static let unknownName: Int32 = 5
    static let jsonSyntax: Int32 = 6
    static let jsonDoesNotFit: Int32 = 7
    /// Also `token`'s signing key file.
    static let cannotReadInput: Int32 = 8
    /// `call --field`: the reply has no such field; `outbox-messages`: no message matches.
    static let noSuchField: Int32 = 9
    /// RPC errors exit with this plus the gRPC status code (NOT_FOUND → 15).
    static let rpcErrorBase: Int32 = 10
    /// 128 + SIGINT, as shells report a process killed by Ctrl-C.
    static let interrupted: Int32 = 130

    /// The table `--help` shows; kept next to the values so the two cannot drift apart.
    static let table = """
        Exit status:
          0        success
          1        health: the service is not SERVING; ledger-check: the payment
                   ledger does not balance or disagrees with the provider
          2        bad command-line usage
          3        TLS failure (certificate not trusted or not for the name, bad
                   CA, certificate or key file)
          4        cannot connect (refused, unreachable, timed out)
          5        unknown service, method, message or enum
          6        the request is not valid JSON
          7        the request does not fit the message (unknown field, wrong type)
          8        cannot read the request (@file or stdin), or token: the
                   signing key file
          9        call --field: the reply has no such field;
                   outbox-messages: no message matches
          10+CODE  the call failed with gRPC status CODE (NOT_FOUND exits 15)
          130      interrupted (Ctrl-C); the call is cancelled on the server too
        """
}

/// Every failure the probe reports: one line for stderr and the exit status that goes with it.
struct ProbeError: Error, CustomStringConvertible {
    var message: String
    var exitCode: Int32
    /// RPC errors are the server's answer, not the tool's failure: they print as `ERROR: CODE: message`
    /// (grpcurl's wording) instead of under the tool's name.
    var isRPCError = false

    init(_ message: String, exitCode: Int32) {
        self.message = message
        self.exitCode = exitCode
    }

    static func usage(_ message: String) -> ProbeError { ProbeError(message, exitCode: ExitStatus.usage) }

    static func rpc(_ error: RPCError) -> ProbeError {
        let text = error.message.isEmpty ? error.code.name : "\(error.code.name): \(oneLine(error.message))"
        var probeError = ProbeError(text, exitCode: ExitStatus.rpcErrorBase + Int32(error.code.rawValue))
        probeError.isRPCError = true
        return probeError
    }

    static let interrupted = ProbeError("cancelled", exitCode: ExitStatus.interrupted)

    /// The line printed on stderr.
    var line: String { isRPCError ? "ERROR: \(message)" : "yedi-probe: \(oneLine(message))" }

    var description: String { line }
}

/// Text from elsewhere (a server's error message, a file name) made safe for one terminal line: line
/// breaks and other control characters are escaped, so they can neither split the line nor drive the
/// terminal.
func oneLine(_ text: String) -> String {
    var result = ""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case "\t": result += "\\t"
        case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value):
            result += "\\u{\(String(scalar.value, radix: 16))}"
        default: result.unicodeScalars.append(scalar)
        }
    }
    return result
}

extension ProbeError {
    /// No connection could be made: a TLS failure (exit 3) or any other (exit 4).
    init(connecting error: RPCConnectionError) {
        self.init(error.message, exitCode: error.kind == .tls ? ExitStatus.tls : ExitStatus.cannotConnect)
    }

    /// The client's TLS context could not be made from the files given.
    init(settingUp error: TLSError) {
        // OpenSSL's reason usually names the file already.
        let file = error.file.flatMap { error.reason.contains($0) ? nil : " (\($0))" } ?? ""
        self.init("cannot set up TLS: \(error.reason)\(file)", exitCode: ExitStatus.tls)
    }
}
