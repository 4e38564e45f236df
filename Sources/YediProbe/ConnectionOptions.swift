import ArgumentParser
import Foundation
import Logging
import RPCCore

/// `HOST:PORT` (`[v6]:PORT` for IPv6 literals), or several separated by commas (a service's replicas:
/// calls go to whichever is ready, round robin, skipping one that answers `UNAVAILABLE`), checked while
/// parsing so a bad address is a usage error.
struct Address: ExpressibleByArgument, CustomStringConvertible {
    let targets: [ClientConfiguration.Target]

    init?(argument: String) {
        var targets: [ClientConfiguration.Target] = []
        for part in argument.split(separator: ",", omittingEmptySubsequences: false) {
            guard let target = ClientConfiguration.Target(String(part)) else { return nil }
            targets.append(target)
        }
        guard !targets.isEmpty else { return nil }
        self.targets = targets
    }

    /// The first address (its host names the server when no `--server-name` is given).
    var first: ClientConfiguration.Target { targets[0] }

    var description: String { targets.map(\.description).joined(separator: ",") }
}

/// The options `call` and `health` share: how to reach and authenticate to the server, what metadata to
/// send, how long to wait, and whether to narrate the call on stderr.
struct ConnectionOptions: ParsableArguments {
    /// The dev PKI's files (`DevPKI` finds the folder), used when no TLS option is given.
    static let defaultCAFile = "deploy/pki/ca.pem"
    static let defaultCertificateFile = "deploy/pki/yedi-probe.pem"
    static let defaultKeyFile = "deploy/pki/yedi-probe.key"

    @Option(
        name: .customLong("ca"),
        help: ArgumentHelp(
            "PEM CA certificate(s) to trust for the server's certificate (default: \(defaultCAFile) if it exists).",
            valueName: "file"
        )
    )
    var caFile: String?

    @Option(
        name: .customLong("cert"),
        help: ArgumentHelp(
            "PEM client certificate for mutual TLS, with --key (default: \(defaultCertificateFile) and "
                + "\(defaultKeyFile) when --ca is the default too, both exist and neither option is given).",
            valueName: "file"
        )
    )
    var certificateFile: String?

    @Option(name: .customLong("key"), help: ArgumentHelp("The PEM private key of --cert.", valueName: "file"))
    var keyFile: String?

    @Option(help: ArgumentHelp("The name the server's certificate must carry (default: the host).", valueName: "name"))
    var serverName: String?

    @Option(help: ArgumentHelp("Sends `authorization: Bearer <token>`.", valueName: "token"))
    var token: String?

    @Option(
        name: [.customShort("H"), .customLong("header")],
        help: ArgumentHelp("Request metadata, repeatable: -H 'request-id: abc'.", valueName: "key:value")
    )
    var headers: [String] = []

    @Option(
        help: ArgumentHelp(
            "Deadline in seconds for connecting and the reply (default: 10; server-streaming calls run until "
                + "the stream ends unless given).",
            valueName: "seconds"
        )
    )
    var timeout: Double?

    @Flag(help: "Narrates on stderr: request metadata, response trailers, status, elapsed time.")
    var verbose = false

    static let defaultTimeout: Double = 10

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout <= 366 * 24 * 3600) {
            throw ValidationError("--timeout must be a number of seconds above 0 (and below a year)")
        }
        if (certificateFile == nil) != (keyFile == nil) {
            throw ValidationError("--cert and --key go together: give both or neither")
        }
        for header in headers { _ = try Self.parse(header: header) }
    }

    // MARK: What the client needs

    /// Request metadata: every `-H`, then the token.
    func metadata() throws -> Metadata {
        var metadata = Metadata()
        for header in headers {
            let (key, value) = try Self.parse(header: header)
            metadata.add(key, value)
        }
        if let token { metadata["authorization"] = "Bearer \(token)" }
        return metadata
    }

    /// `key:value` or `key: value`; keys are ASCII without spaces, lowercased on the wire.
    static func parse(header: String) throws -> (key: String, value: String) {
        guard let colon = header.firstIndex(of: ":") else {
            throw ValidationError("-H \(quotedArgument(header)): expected key:value")
        }
        let key = header[..<colon].trimmingCharacters(in: .whitespaces)
        let value = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        let allowed = key.unicodeScalars.allSatisfy {
            $0.isASCII && $0.value > 0x20 && $0.value < 0x7F && $0 != ":"
        }
        guard !key.isEmpty, allowed else {
            throw ValidationError("-H \(quotedArgument(header)): the key must be printable ASCII without spaces")
        }
        return (key.lowercased(), value)
    }

    /// The deadline of a call of `kind`: `--timeout`, or 10 s for unary calls and none for streams.
    func callTimeout(for kind: RPCKind) -> Duration? {
        if let timeout { return .seconds(timeout) }
        return kind == .unary ? .seconds(Self.defaultTimeout) : nil
    }

    /// How long to wait for a connection.
    var connectTimeout: Duration { .seconds(timeout ?? Self.defaultTimeout) }

    /// Trust roots and client identity, with the dev PKI's files as defaults.
    func tlsFiles() throws(ProbeError) -> (ca: String, certificate: String?, key: String?) {
        let files = FileManager.default
        let ca: String
        var usingDevPKI = false
        if let caFile {
            ca = caFile
        } else if let devCA = DevPKI.file("ca.pem") {
            ca = devCA
            usingDevPKI = true
        } else {
            throw .usage(
                "no CA to verify the server with: pass --ca FILE (the CA that signed the server's certificate), "
                    + "set YEDI_PKI, or run deploy/dev-pki.sh in the repository root to make \(Self.defaultCAFile)"
            )
        }
        var certificate = certificateFile
        var key = keyFile
        // The dev PKI's client certificate goes with the dev PKI's CA only: with another --ca, the server
        // most likely belongs to another PKI, which would refuse it.
        if usingDevPKI, certificate == nil, key == nil, let devCertificate = DevPKI.file("yedi-probe.pem"),
            let devKey = DevPKI.file("yedi-probe.key")
        {
            certificate = devCertificate
            key = devKey
        }
        for (option, file) in [("--ca", ca), ("--cert", certificate), ("--key", key)] {
            guard let file else { continue }
            guard files.isReadableFile(atPath: file) else {
                let reason = files.fileExists(atPath: file) ? "not readable" : "no such file"
                throw ProbeError("cannot read the \(option) file \(oneLine(file)): \(reason)", exitCode: ExitStatus.tls)
            }
        }
        return (ca, certificate, key)
    }

    func clientConfiguration(address: Address) throws(ProbeError) -> ClientConfiguration {
        let files = try tlsFiles()
        return ClientConfiguration(
            targets: address.targets,
            tls: .client(trustRootsFile: files.ca, certificateChainFile: files.certificate, privateKeyFile: files.key),
            serverName: serverName,
            connectTimeout: connectTimeout,
            // A probe reports what happened to the one call it was asked to make; with several addresses,
            // an idempotent call that one of them answered UNAVAILABLE may go to each of the others once.
            maxAttempts: address.targets.count,
            // The probe reports failures itself, in one line; the client's own log would repeat them.
            logger: Logger(label: "yedi-probe", factory: { _ in SwiftLogNoOpLogHandler() })
        )
    }

    // MARK: --verbose

    /// Metadata lines for --verbose; secrets are hidden, as the server's logs hide them.
    static func describe(_ metadata: Metadata, direction: String) -> [String] {
        metadata.map { entry in
            let value = secretKeys.contains(entry.key) ? "<redacted>" : oneLine(entry.value)
            return "\(direction) \(entry.key): \(value)"
        }
    }

    private static let secretKeys: Set<String> = ["authorization", "cookie", "x-api-key"]
}

/// An argument as the user typed it, quoted, for messages.
func quotedArgument(_ text: String) -> String {
    "'\(oneLine(text))'"
}
