import ProtoBridge
import ProtoJSON

#if canImport(Glibc)
    import Glibc
#endif

/// The request argument of `call`: JSON text, `@file`, or `-` for stdin. Read and decoded before any
/// connection is made, so a mistake in the request costs no round trip.
struct RequestInput {
    /// The text as given (`{"text": "hi"}`, `@request.json`, `-`).
    let argument: String

    /// Where the JSON came from, for messages: `request.json`, `stdin`, or `the argument`.
    var sourceName: String {
        if argument == "-" { return "stdin" }
        if argument.hasPrefix("@") { return oneLine(String(argument.dropFirst())) }
        return "the argument"
    }

    /// The request as a message of `schema`, through proto3's JSON mapping (ProtoJSON, the one mapping
    /// the whole code base uses).
    func message(of schema: MessageSchema) throws(ProbeError) -> DynamicMessage {
        let text = try readText()
        do {
            return try ProtoJSONDecoder().decode(utf8: text, as: schema)
        } catch {
            throw Self.explain(error, source: sourceName, schema: schema)
        }
    }

    func readText() throws(ProbeError) -> [UInt8] {
        if argument == "-" { return try Self.readAll(descriptor: STDIN_FILENO, name: "stdin") }
        guard argument.hasPrefix("@") else { return Array(argument.utf8) }
        let path = String(argument.dropFirst())
        guard !path.isEmpty else { throw .usage("'@' must be followed by a file name (@request.json)") }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ProbeError("cannot read @\(oneLine(path)): \(Self.reason())", exitCode: ExitStatus.cannotReadInput)
        }
        defer { close(descriptor) }
        return try Self.readAll(descriptor: descriptor, name: "@" + path)
    }

    private static func readAll(descriptor: Int32, name: String) throws(ProbeError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes += chunk[..<count]
            } else if count == 0 {
                return bytes
            } else if errno != EINTR {
                throw ProbeError("cannot read \(oneLine(name)): \(reason())", exitCode: ExitStatus.cannotReadInput)
            }
        }
    }

    private static func reason() -> String { String(cString: strerror(errno)) }

    /// Syntax errors with `line:column`; errors of fit with the field path the input spelled.
    static func explain(_ error: ProtoJSONError, source: String, schema: MessageSchema) -> ProbeError {
        let location = error.position.map { "\($0.line):\($0.column)" }
        if error.isSyntaxError {
            let at = location.map { " at \($0)" } ?? ""
            return ProbeError("invalid JSON in \(source)\(at): \(error.detail)", exitCode: ExitStatus.jsonSyntax)
        }
        let path = error.path.isEmpty ? "" : "\(error.path): "
        let at = location.map { " (\(source) \($0))" } ?? ""
        return ProbeError(
            "the request does not fit \(schema.fullName): \(path)\(error.detail)\(at)",
            exitCode: ExitStatus.jsonDoesNotFit
        )
    }
}
