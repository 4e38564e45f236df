/// Where in a JSON text something is: what a person needs to find it in an editor, and the byte offset
/// a tool needs.
public struct JSONPosition: Sendable, Hashable, CustomStringConvertible {
    /// 1-based line; lines end at `\n`.
    public let line: Int
    /// 1-based column, counted in Unicode scalars so that Korean text moves it by one per syllable.
    public let column: Int
    /// 0-based offset in the UTF-8 text.
    public let byteOffset: Int

    public init(line: Int, column: Int, byteOffset: Int) {
        self.line = line
        self.column = column
        self.byteOffset = byteOffset
    }

    /// The position of `offset` in `text`. Computed only when an error is raised, so parsing keeps just offsets.
    init(offset: Int, in text: [UInt8]) {
        let end = min(max(offset, 0), text.count)
        var line = 1
        var column = 1
        for byte in text[..<end] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                // Continuation bytes of a UTF-8 sequence do not start a new scalar.
                column += 1
            }
        }
        self.init(line: line, column: column, byteOffset: end)
    }

    public var description: String { "line \(line), column \(column)" }
}

/// Why a JSON text did not become a message, or a message did not become JSON: WHAT went wrong and WHERE,
/// so that the probe can show a person which key or value of their input to fix.
public struct ProtoJSONError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Problem: Sendable, Hashable {
        /// The text is not RFC 8259 JSON (also: nesting too deep, invalid UTF-8).
        case syntax(String)
        /// An object has the same key twice; which of the two was meant is anyone's guess.
        case duplicateKey(String)
        /// A key names no field of `messageType`; `suggestion` is a field name a typo away.
        case unknownField(messageType: String, suggestion: String?)
        /// The JSON value has the wrong kind or shape for the field (`expected` reads "an int32").
        case wrongType(expected: String, found: String)
        /// A number (or numeric string) that does not fit the field's type.
        case outOfRange(expected: String, found: String)
        /// A number with a fractional part for an integer field.
        case notAnInteger(expected: String, found: String)
        /// A string that names no value of the enum type.
        case unknownEnumValue(enumType: String, found: String)
        /// A `bytes` field's string is not base64 (standard or URL-safe, padded or not).
        case invalidBase64(String)
        /// The same field appears under both of its names (`birthDate` and `birth_date`).
        case duplicateField(firstKey: String)
        /// Two members of one oneof are set.
        case oneofConflict(firstKey: String)
        /// protobuf-c packs strings as C strings, so a `\u0000` would cut the string short on the wire.
        case stringContainsNUL
        /// A `DynamicMessage` holds a value that its schema does not allow (encoding only).
        case schemaMismatch(String)
    }

    public let problem: Problem
    /// Dotted field path as the input spelled the keys (`designer.shop.nmae`, `posts[2].title`); "" for the
    /// top level.
    public let path: String
    /// Where in the input text; `nil` for errors that have no text (encoding).
    public let position: JSONPosition?

    public init(_ problem: Problem, path: String = "", position: JSONPosition? = nil) {
        self.problem = problem
        self.path = path
        self.position = position
    }

    /// Whether the text itself is malformed, as opposed to well-formed JSON that does not fit the schema.
    public var isSyntaxError: Bool {
        switch problem {
        case .syntax, .duplicateKey: true
        default: false
        }
    }

    /// What went wrong, without the location.
    public var detail: String {
        switch problem {
        case .syntax(let message): message
        case .duplicateKey(let key): "duplicate key \(quoted(key))"
        case .unknownField(let messageType, let suggestion):
            "unknown field of \(messageType)" + (suggestion.map { "; did you mean \(quoted($0))?" } ?? "")
        case .wrongType(let expected, let found): "expected \(expected), got \(found)"
        case .outOfRange(let expected, let found): "expected \(expected), got \(found), which is out of range"
        case .notAnInteger(let expected, let found): "expected \(expected), got \(found), which is not an integer"
        case .unknownEnumValue(let enumType, let found): "expected a \(enumType) value, got \(found)"
        case .invalidBase64(let reason): "expected base64 bytes: \(reason)"
        case .duplicateField(let firstKey): "the field is already set (as \(quoted(firstKey)))"
        case .oneofConflict(let firstKey): "another member of the same oneof is already set (\(quoted(firstKey)))"
        case .stringContainsNUL: "strings must not contain U+0000 (protobuf-c cannot carry it)"
        case .schemaMismatch(let message): "the message does not match its schema: \(message)"
        }
    }

    /// `birthDate.year: expected an int32, got a string "x" (line 3, column 13)`, or for malformed text
    /// `JSON syntax error at line 1, column 9 (byte offset 8): ...`.
    public var description: String {
        if isSyntaxError {
            let location = position.map { " at \($0) (byte offset \($0.byteOffset))" } ?? ""
            return "JSON syntax error\(location): \(detail)"
        }
        let location = position.map { " (\($0))" } ?? ""
        return (path.isEmpty ? "" : "\(path): ") + detail + location
    }
}

/// A string as JSON would write it, for messages; long ones are cut so an error stays one line.
func quoted(_ text: String, limit: Int = 40) -> String {
    var result = "\""
    for (index, scalar) in text.unicodeScalars.enumerated() {
        if index == limit {
            result += "…"
            break
        }
        switch scalar {
        case "\"": result += "\\\""
        case "\\": result += "\\\\"
        case "\n": result += "\\n"
        case _ where scalar.value < 0x20: result += "\\u" + hex4(scalar.value)
        default: result.unicodeScalars.append(scalar)
        }
    }
    return result + "\""
}

/// Four lowercase hex digits, as in `\u001f`.
func hex4(_ value: UInt32) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
