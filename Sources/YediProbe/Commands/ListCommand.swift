import ArgumentParser
import Foundation

/// `yedi-probe list [SERVICE]`: what can be called, with kinds and types, straight from the build.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Lists every service and its methods, or the methods of one service.",
        discussion: "Each method shows its kind (unary or server-streaming) and its request and response types."
    )

    @Argument(help: ArgumentHelp("A service's full name, e.g. yedi.echo.Echo.", valueName: "service"))
    var service: String?

    @Option(help: "Output format: text or json.")
    var format: OutputFormat = .text

    func run() throws {
        let catalog = SchemaCatalog.shared
        var services = catalog.services
        if let service { services = [try catalog.requireService(service)] }
        switch format {
        case .text:
            Output.line(Self.table(services))
        case .json:
            Output.line(Self.json(services))
        }
    }

    /// A service per paragraph, a method per line, in columns.
    static func table(_ services: [ProbeService]) -> String {
        let nameWidth = services.flatMap(\.methods).map(\.fullName.count).max() ?? 0
        let kindWidth = services.flatMap(\.methods).map(\.kindText.count).max() ?? 0
        return services.map { service in
            let lines = service.methods.map { method in
                let response = method.descriptor?.kind == .serverStreaming ? "stream " : ""
                return "  " + method.fullName.padding(toLength: nameWidth, withPad: " ", startingAt: 0) + "  "
                    + method.kindText.padding(toLength: kindWidth, withPad: " ", startingAt: 0) + "  "
                    + "\(method.input.fullName) -> \(response)\(method.output.fullName)"
            }
            return ([service.fullName] + lines).joined(separator: "\n")
        }.joined(separator: "\n\n")
    }

    /// `{"services": [{"name", "methods": [{"name", "fullName", "kind", "idempotency", "requestType",
    /// "responseType"}]}]}`, keys in that order.
    static func json(_ services: [ProbeService]) -> String {
        let list = services.map { service in
            ListingJSON.object([
                ("name", .string(service.fullName)),
                (
                    "methods",
                    .array(
                        service.methods.map { method in
                            .object([
                                ("name", .string(method.name)),
                                ("fullName", .string(method.fullName)),
                                ("kind", .string(method.kindText)),
                                ("idempotency", .string(method.idempotencyOption)),
                                ("requestType", .string(method.input.fullName)),
                                ("responseType", .string(method.output.fullName)),
                            ])
                        }
                    )
                ),
            ])
        }
        return ListingJSON.object([("services", .array(list))]).rendered(indent: 0)
    }
}

/// Just enough JSON for the listing, with keys in a chosen order (Foundation's encoder would shuffle or
/// sort them), indented like the probe's other JSON.
indirect enum ListingJSON {
    case string(String)
    case array([ListingJSON])
    case object([(String, ListingJSON)])

    func rendered(indent: Int) -> String {
        let inner = String(repeating: "  ", count: indent + 1)
        let outer = String(repeating: "  ", count: indent)
        switch self {
        case .string(let text):
            return Self.quoted(text)
        case .array(let items):
            guard !items.isEmpty else { return "[]" }
            let lines = items.map { inner + $0.rendered(indent: indent + 1) }
            return "[\n" + lines.joined(separator: ",\n") + "\n\(outer)]"
        case .object(let members):
            guard !members.isEmpty else { return "{}" }
            let lines = members.map { inner + Self.quoted($0.0) + ": " + $0.1.rendered(indent: indent + 1) }
            return "{\n" + lines.joined(separator: ",\n") + "\n\(outer)}"
        }
    }

    private static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case _ where scalar.value < 0x20: result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
