import ArgumentParser
import ProtoBridge

/// `yedi-probe describe NAME`: a service, method, message or enum as proto-like text, with every type it
/// refers to, so that a request can be written without opening the .proto files.
struct DescribeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "describe",
        abstract: "Shows a service, a method, a message or an enum, with the types it uses.",
        discussion: """
            NAME is a full name: yedi.echo.Echo (service), yedi.echo.Echo/Echo or yedi.echo.Echo.Echo \
            (method), yedi.echo.EchoRequest (message), yedi.account.Role (enum). Messages are followed by \
            the definitions of the message and enum types their fields use, each once. Requests may use \
            the field names shown or their lowerCamelCase JSON names.
            """
    )

    @Argument(help: ArgumentHelp("The full name of a service, method, message or enum.", valueName: "name"))
    var name: String

    func run() throws {
        Output.line(DefinitionText.render(try SchemaCatalog.shared.requireDefinition(name)))
    }
}

/// proto-like text for schemas. protobuf-c keeps no oneof names, so oneofs print as `oneof { … }`.
enum DefinitionText {
    enum TypeReference: Hashable {
        case message(MessageSchema)
        case enumType(EnumSchema)
    }

    static func render(_ definition: SchemaCatalog.Definition) -> String {
        switch definition {
        case .service(let service):
            return serviceBlock(service.fullName, service.methods)
        case .method(let method):
            let types = reachableTypes(from: [.message(method.input), .message(method.output)])
            return ([serviceBlock(method.serviceName, [method])] + types.map { render($0) }).joined(separator: "\n\n")
        case .message(let message):
            return reachableTypes(from: [.message(message)]).map { render($0) }.joined(separator: "\n\n")
        case .enumType(let enumSchema):
            return render(enumSchema)
        }
    }

    static func serviceBlock(_ name: String, _ methods: [ProbeMethod]) -> String {
        let lines = methods.map { method in
            let stream = method.descriptor?.kind == .serverStreaming ? "stream " : ""
            let notes = [method.kindText] + (method.idempotencyText.map { [$0] } ?? [])
            return "  rpc \(method.name)(\(method.input.fullName)) returns (\(stream)\(method.output.fullName));"
                + "  // \(notes.joined(separator: ", "))"
        }
        return (["service \(name) {"] + lines + ["}"]).joined(separator: "\n")
    }

    static func render(_ type: TypeReference) -> String {
        switch type {
        case .message(let message): render(message)
        case .enumType(let enumSchema): render(enumSchema)
        }
    }

    static func render(_ message: MessageSchema) -> String {
        guard !message.fields.isEmpty else { return "message \(message.fullName) {}" }
        var lines = ["message \(message.fullName) {"]
        var printedOneofs: Set<Int> = []
        for field in message.fields {
            guard let oneof = field.oneofID else {
                lines.append("  " + declaration(field))
                continue
            }
            // The whole oneof, where its first member is.
            guard printedOneofs.insert(oneof).inserted else { continue }
            lines.append("  oneof {")
            for member in message.oneofMembers(of: field) { lines.append("    " + declaration(member)) }
            lines.append("  }")
        }
        lines.append("}")
        return lines.joined(separator: "\n")
    }

    static func render(_ enumSchema: EnumSchema) -> String {
        let values = enumSchema.values.map { "  \($0.name) = \($0.number);" }
        return (["enum \(enumSchema.fullName) {"] + values + ["}"]).joined(separator: "\n")
    }

    /// `repeated yedi.account.MessengerLink messenger_links = 8;`
    static func declaration(_ field: FieldSchema) -> String {
        let type = field.messageSchema?.fullName ?? field.enumSchema?.fullName ?? field.type.protoName
        return "\(field.isRepeated ? "repeated " : "")\(type) \(field.name) = \(field.number);"
    }

    /// `roots`, then every message and enum type their fields use, transitively, each once, in the
    /// order they are first met.
    static func reachableTypes(from roots: [TypeReference]) -> [TypeReference] {
        var order: [TypeReference] = []
        var seen: Set<TypeReference> = []
        var queue = roots[...]
        while let next = queue.popFirst() {
            guard seen.insert(next).inserted else { continue }
            order.append(next)
            guard case .message(let message) = next else { continue }
            for field in message.fields {
                if let nested = field.messageSchema { queue.append(.message(nested)) }
                if let nested = field.enumSchema { queue.append(.enumType(nested)) }
            }
        }
        return order
    }
}
