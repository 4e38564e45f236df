import ArgumentParser
import Foundation
import ProtoBridge
import ProtoJSON

/// `yedi-probe call HOST:PORT svc/Method [JSON | @file | -]`: one call, request and replies as JSON.
struct CallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Calls a method with a JSON request and prints the reply.",
        discussion: """
            The request and replies use proto3's JSON mapping: lowerCamelCase (or proto) field names, \
            64-bit integers as strings, bytes as base64, enums by name. A unary reply prints as indented \
            JSON; a server-streaming call prints one compact JSON object per line as each reply arrives, \
            until the stream ends or Ctrl-C cancels the call (on the server too) and exits 130.

            Examples:
              yedi-probe call localhost:4433 yedi.echo.Echo/Echo '{"text": "안녕", "payload": "AQID"}'
              yedi-probe call localhost:4433 yedi.echo.Echo/Expand '{"count": 3}' --format text
              echo '{"service": ""}' | yedi-probe call localhost:4433 yedi.health.Health/Check -
              TOKEN=$(yedi-probe call 127.0.0.1:7001 yedi.account.AccountService/SignIn \\
                '{"email": "minji@example.com", "password": "hair2024!"}' --field session.accessToken)

            --field prints one field of each reply instead of the whole reply, for scripts that feed \
            one call's answer into the next: a dotted path of JSON names with array indexes \
            (posts.0.id); strings print as they are, anything else as compact JSON.
            """
    )

    @Argument(
        help: ArgumentHelp(
            "The server, HOST:PORT; or a service's replicas, HOST:PORT,HOST:PORT,… (calls go to those ready, "
                + "round robin, skipping one that answers UNAVAILABLE).",
            valueName: "host:port"))
    var address: Address

    @Argument(help: ArgumentHelp("The method: package.Service/Method.", valueName: "method"))
    var method: String

    @Argument(
        help: ArgumentHelp(
            "The request: JSON text, @FILE to read it from a file, or - to read stdin.",
            valueName: "request"
        )
    )
    var request: String = "{}"

    @Flag(help: "Also print fields that hold their default value (0, \"\", false, [], null).")
    var emitDefaults = false

    @Option(help: "Output format: json (proto3 JSON) or text (protobuf text format).")
    var format: OutputFormat = .json

    @Option(
        help: ArgumentHelp(
            "Prints only this field of each reply: a dotted path of JSON names (session.accessToken, posts.0.id).",
            valueName: "path"))
    var field: String?

    @OptionGroup(title: "Connection Options")
    var connection: ConnectionOptions

    func run() async throws {
        let method = try SchemaCatalog.shared.requireMethod(method)
        let message = try RequestInput(argument: request).message(of: method.input)
        let streaming = method.descriptor?.kind == .serverStreaming
        let printer = ReplyPrinter(
            format: format, emitDefaults: emitDefaults, oneLine: streaming,
            field: field.map { $0.split(separator: ".", omittingEmptySubsequences: false).map(String.init) })
        try await Invocation(address: address, method: method, connection: connection).run(request: message) {
            reply throws(ProbeError) in
            Output.line(try printer.render(reply))
        }
    }
}

/// Turns a reply into the text `--format` asks for.
struct ReplyPrinter: Sendable {
    var format: OutputFormat
    var emitDefaults: Bool
    /// Stream replies: one line each, so that line-oriented tools can follow the stream.
    var oneLine: Bool
    /// `--field`: the path of the one field to print.
    var field: [String]? = nil

    func render(_ reply: DynamicMessage) throws(ProbeError) -> String {
        if let field { return try Self.extract(field, from: reply) }
        switch format {
        case .json:
            let encoder = ProtoJSONEncoder(style: oneLine ? .compact : .pretty, emitDefaults: emitDefaults)
            do {
                return try encoder.encode(reply)
            } catch {
                // The reply was decoded with this schema, so this means a bug, not bad input.
                throw .rpc(.init(code: .internalError, message: "the reply cannot be written as JSON: \(error)"))
            }
        case .text:
            return TextFormat(multiline: !oneLine, emitDefaults: emitDefaults).render(reply)
        }
    }

    /// The field at `path` of the reply's JSON (defaults included, so `false` and `0` are found too).
    static func extract(_ path: [String], from reply: DynamicMessage) throws(ProbeError) -> String {
        let json: String
        do {
            json = try ProtoJSONEncoder(style: .compact, emitDefaults: true).encode(reply)
        } catch {
            throw .rpc(.init(code: .internalError, message: "the reply cannot be written as JSON: \(error)"))
        }
        var value: Any? = try? JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
        for (depth, name) in path.enumerated() {
            switch value {
            case let object as [String: Any]: value = object[name]
            case let array as [Any]: value = Int(name).flatMap { array.indices.contains($0) ? array[$0] : nil }
            default: value = nil
            }
            if value == nil {
                let at = path[...depth].joined(separator: ".")
                throw ProbeError("--field: the reply has no \(printable(at))", exitCode: ExitStatus.noSuchField)
            }
        }
        switch value {
        case let text as String: return text
        case let other?:
            let data = try? JSONSerialization.data(withJSONObject: other, options: [.fragmentsAllowed, .sortedKeys])
            return data.map { String(decoding: $0, as: UTF8.self) } ?? "\(other)"
        case nil: return ""
        }
    }
}

/// `oneLine`, reachable where `ReplyPrinter.oneLine` (the property) hides it.
private func printable(_ text: String) -> String { oneLine(text) }
