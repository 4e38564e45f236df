/// Writes JSON text piece by piece into UTF-8 bytes, compact or pretty.
///
/// The encoder streams into it instead of building a tree first: a 1 MiB `bytes` field becomes its base64
/// text once, straight in the output. Pretty output indents by two spaces and keeps `{}`/`[]` on one line,
/// as `JSON.stringify(value, null, 2)` does, so the probe's output looks familiar.
struct JSONWriter {
    private(set) var output: [UInt8] = []
    private let pretty: Bool
    /// One entry per open array or object: whether it has an element yet (so a comma is due).
    private var hasElements: [Bool] = []
    /// A key was just written; the next value belongs to it and needs no comma or line break.
    private var afterKey = false

    init(pretty: Bool) {
        self.pretty = pretty
    }

    var text: String { String(decoding: output, as: UTF8.self) }

    mutating func beginObject() {
        beforeValue()
        output.append(UInt8(ascii: "{"))
        hasElements.append(false)
    }

    mutating func endObject() { close(UInt8(ascii: "}")) }

    mutating func beginArray() {
        beforeValue()
        output.append(UInt8(ascii: "["))
        hasElements.append(false)
    }

    mutating func endArray() { close(UInt8(ascii: "]")) }

    mutating func key(_ key: String) {
        beforeElement()
        appendQuoted(key)
        output.append(UInt8(ascii: ":"))
        if pretty { output.append(UInt8(ascii: " ")) }
        afterKey = true
    }

    mutating func string(_ value: String) {
        beforeValue()
        appendQuoted(value)
    }

    /// `literal` must already be a valid JSON number (the caller formats it).
    mutating func number(_ literal: String) {
        beforeValue()
        output.append(contentsOf: literal.utf8)
    }

    mutating func bool(_ value: Bool) {
        beforeValue()
        output.append(contentsOf: (value ? "true" : "false").utf8)
    }

    mutating func null() {
        beforeValue()
        output.append(contentsOf: "null".utf8)
    }

    /// Bytes as a base64 string; base64 needs no escaping, so it is written straight into the output.
    mutating func base64(_ bytes: [UInt8]) {
        beforeValue()
        output.append(UInt8(ascii: "\""))
        Base64.encode(bytes, into: &output)
        output.append(UInt8(ascii: "\""))
    }

    /// A whole parsed tree (tests use it to check that parse → write → parse changes nothing).
    mutating func value(_ value: JSONValue) {
        switch value.content {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .number(let literal): number(literal)
        case .string(let text): string(text)
        case .array(let elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case .object(let members):
            beginObject()
            for member in members {
                key(member.key)
                self.value(member.value)
            }
            endObject()
        }
    }

    // MARK: Layout

    private mutating func beforeValue() {
        if afterKey {
            afterKey = false
        } else {
            beforeElement()
        }
    }

    /// A comma after the previous element, then (pretty) a line break and the indentation.
    private mutating func beforeElement() {
        guard let last = hasElements.indices.last else { return }
        if hasElements[last] { output.append(UInt8(ascii: ",")) }
        hasElements[last] = true
        newline()
    }

    private mutating func close(_ bracket: UInt8) {
        let hadElements = hasElements.removeLast()
        if hadElements { newline() }
        output.append(bracket)
    }

    private mutating func newline() {
        guard pretty else { return }
        output.append(UInt8(ascii: "\n"))
        output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * hasElements.count))
    }

    // MARK: Strings

    /// RFC 8259 escaping: `"` and `\`, control characters as `\n`-style short escapes where JSON has one and
    /// `\u00XX` otherwise. Everything else, Korean text and emoji included, stays UTF-8 as it is.
    private mutating func appendQuoted(_ text: String) {
        output.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var runStart = 0
            for (index, byte) in bytes.enumerated() {
                let escape: String
                switch byte {
                case UInt8(ascii: "\""): escape = "\\\""
                case UInt8(ascii: "\\"): escape = "\\\\"
                case UInt8(ascii: "\n"): escape = "\\n"
                case UInt8(ascii: "\r"): escape = "\\r"
                case UInt8(ascii: "\t"): escape = "\\t"
                case 0x08: escape = "\\b"
                case 0x0C: escape = "\\f"
                case ..<0x20: escape = "\\u" + hex4(UInt32(byte))
                default: continue
                }
                output.append(contentsOf: bytes[runStart..<index])
                output.append(contentsOf: escape.utf8)
                runStart = index + 1
            }
            output.append(contentsOf: bytes[runStart...])
        }
        output.append(UInt8(ascii: "\""))
    }
}
