/// A strict RFC 8259 parser over UTF-8 bytes that keeps byte offsets for error messages.
///
/// Foundation's `JSONSerialization` turns numbers into `Double` (losing int64 digits), accepts duplicate
/// keys and reports no positions, so the probe could neither round-trip ids nor say where an error is.
/// This one rejects everything RFC 8259 does not allow (trailing commas, comments, single quotes, leading
/// zeros, lone surrogates, invalid UTF-8, raw control characters in strings), rejects duplicate keys and
/// nesting deeper than `maximumDepth`, and throws instead of trapping on any input: it never indexes past
/// the end and its recursion is bounded by the depth limit.
struct JSONParser {
    /// Arrays and objects nested deeper than this are refused, so hostile input cannot exhaust the stack.
    static let maximumDepth = 100

    private let text: [UInt8]
    private var index = 0
    private var depth = 0

    private init(text: [UInt8]) {
        self.text = text
    }

    /// Parses one JSON value that spans the whole text (surrounding whitespace and a leading UTF-8 byte
    /// order mark aside).
    static func parse(_ text: [UInt8]) throws(ProtoJSONError) -> JSONValue {
        var parser = JSONParser(text: text)
        if text.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        guard parser.index == text.count else {
            throw parser.syntaxError("expected the end of the text after the JSON value, found \(parser.found())")
        }
        return value
    }

    // MARK: Values

    private mutating func parseValue() throws(ProtoJSONError) -> JSONValue {
        let start = index
        guard let byte = peek() else { throw syntaxError("expected a JSON value, found the end of the text") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return JSONValue(content: .string(try parseString().string), offset: start)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return JSONValue(content: .number(try parseNumber()), offset: start)
        case UInt8(ascii: "t"): return JSONValue(content: .bool(true), offset: try parseLiteral("true"))
        case UInt8(ascii: "f"): return JSONValue(content: .bool(false), offset: try parseLiteral("false"))
        case UInt8(ascii: "n"): return JSONValue(content: .null, offset: try parseLiteral("null"))
        default: throw syntaxError("expected a JSON value, found \(found())")
        }
    }

    private mutating func parseObject() throws(ProtoJSONError) -> JSONValue {
        let start = index
        try enterContainer()
        index += 1
        var members: [JSONValue.Member] = []
        // Keys compared as UTF-8 bytes: Swift's String equality would merge canonically equivalent keys.
        var seen: Set<[UInt8]> = []
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return JSONValue(content: .object(members), offset: start)
        }
        while true {
            guard peek() == UInt8(ascii: "\"") else {
                throw syntaxError("expected a string key in double quotes, found \(found())")
            }
            let keyOffset = index
            let key = try parseString()
            guard seen.insert(key.utf8).inserted else {
                throw ProtoJSONError(.duplicateKey(key.string), position: JSONPosition(offset: keyOffset, in: text))
            }
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else {
                throw syntaxError("expected ':' after the key \(quoted(key.string)), found \(found())")
            }
            index += 1
            skipWhitespace()
            members.append(JSONValue.Member(key: key.string, keyOffset: keyOffset, value: try parseValue()))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
                if peek() == UInt8(ascii: "}") { throw syntaxError("a trailing comma before '}' is not allowed") }
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return JSONValue(content: .object(members), offset: start)
            default:
                throw syntaxError("expected ',' or '}' after an object member, found \(found())")
            }
        }
    }

    private mutating func parseArray() throws(ProtoJSONError) -> JSONValue {
        let start = index
        try enterContainer()
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return JSONValue(content: .array(elements), offset: start)
        }
        while true {
            elements.append(try parseValue())
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
                if peek() == UInt8(ascii: "]") { throw syntaxError("a trailing comma before ']' is not allowed") }
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return JSONValue(content: .array(elements), offset: start)
            default:
                throw syntaxError("expected ',' or ']' after an array element, found \(found())")
            }
        }
    }

    private mutating func enterContainer() throws(ProtoJSONError) {
        depth += 1
        if depth > Self.maximumDepth {
            throw syntaxError("arrays and objects nested deeper than \(Self.maximumDepth) levels are not accepted")
        }
    }

    /// Returns the offset where the literal starts.
    private mutating func parseLiteral(_ literal: StaticString) throws(ProtoJSONError) -> Int {
        let start = index
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        guard text.count - index >= expected.count, text[index..<index + expected.count].elementsEqual(expected)
        else { throw syntaxError("expected a JSON value, found \(found())") }
        index += expected.count
        return start
    }

    // MARK: Numbers

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, returned as its text.
    private mutating func parseNumber() throws(ProtoJSONError) -> String {
        let start = index
        if peek() == UInt8(ascii: "-") { index += 1 }
        switch peek() {
        case UInt8(ascii: "0"):
            index += 1
            if let next = peek(), isDigit(next) { throw syntaxError("numbers must not have leading zeros") }
        case let byte? where isDigit(byte):
            skipDigits()
        default:
            throw syntaxError("expected a digit after '-', found \(found())")
        }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard let byte = peek(), isDigit(byte) else {
                throw syntaxError("expected a digit after the decimal point, found \(found())")
            }
            skipDigits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard let byte = peek(), isDigit(byte) else {
                throw syntaxError("expected a digit in the exponent, found \(found())")
            }
            skipDigits()
        }
        return String(decoding: text[start..<index], as: UTF8.self)
    }

    private mutating func skipDigits() {
        while let byte = peek(), isDigit(byte) { index += 1 }
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// ASCII letters, digits and `_`: what a bare word such as `NaN` or `undefined` is made of.
    private func isWordByte(_ byte: UInt8) -> Bool {
        isDigit(byte) || byte == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
    }

    // MARK: Strings

    /// A string's value and its UTF-8 bytes (for duplicate-key checks).
    private mutating func parseString() throws(ProtoJSONError) -> (string: String, utf8: [UInt8]) {
        let start = index
        index += 1
        var bytes: [UInt8] = []
        while true {
            // Copy runs of plain ASCII at once: base64 of a 1 MiB payload is one long run.
            let runStart = index
            while index < text.count, text[index] >= 0x20, text[index] < 0x80, text[index] != UInt8(ascii: "\""),
                text[index] != UInt8(ascii: "\\")
            {
                index += 1
            }
            bytes.append(contentsOf: text[runStart..<index])
            guard let byte = peek() else {
                throw ProtoJSONError(
                    .syntax("the string that starts here has no closing quote"),
                    position: JSONPosition(offset: start, in: text))
            }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return (String(decoding: bytes, as: UTF8.self), bytes)
            case UInt8(ascii: "\\"):
                appendUTF8(try parseEscape(), to: &bytes)
            case ..<0x20:
                throw syntaxError("control character U+\(hex4(UInt32(byte)).uppercased()) must be escaped in a string")
            default:
                let length = try utf8SequenceLength()
                bytes.append(contentsOf: text[index..<index + length])
                index += length
            }
        }
    }

    /// Parses one escape sequence at `index` (the backslash); a surrogate pair counts as one.
    private mutating func parseEscape() throws(ProtoJSONError) -> Unicode.Scalar {
        let start = index
        index += 1
        guard let byte = peek() else { throw syntaxError("the text ends inside an escape sequence") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"): break
        default:
            index = start
            throw syntaxError("invalid escape sequence: '\\' followed by \(found(at: start + 1))")
        }
        let unit = try parseHex4(escapeStart: start)
        switch unit {
        case 0xD800...0xDBFF:
            let lowStart = index
            guard peek() == UInt8(ascii: "\\"), peek(at: index + 1) == UInt8(ascii: "u") else {
                index = start
                throw syntaxError("lone high surrogate \\u\(hex4(unit).uppercased()) (no low surrogate follows)")
            }
            index += 2
            let low = try parseHex4(escapeStart: lowStart)
            guard (0xDC00...0xDFFF).contains(low) else {
                index = start
                throw syntaxError("lone high surrogate \\u\(hex4(unit).uppercased()) (no low surrogate follows)")
            }
            return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!
        case 0xDC00...0xDFFF:
            index = start
            throw syntaxError("lone low surrogate \\u\(hex4(unit).uppercased())")
        default:
            return Unicode.Scalar(unit)!
        }
    }

    private mutating func parseHex4(escapeStart: Int) throws(ProtoJSONError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            let digit: UInt32
            switch peek() {
            case let byte? where isDigit(byte): digit = UInt32(byte - UInt8(ascii: "0"))
            case let byte? where (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte):
                digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case let byte? where (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte):
                digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default:
                throw syntaxError("\\u must be followed by four hex digits, found \(found())")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private func appendUTF8(_ scalar: Unicode.Scalar, to bytes: inout [UInt8]) {
        UTF8.encode(scalar) { bytes.append($0) }
    }

    /// The length of the valid UTF-8 sequence at `index`, or an error at its first bad byte. Overlong
    /// forms, encoded surrogates and values past U+10FFFF are invalid (RFC 3629).
    private func utf8SequenceLength() throws(ProtoJSONError) -> Int {
        guard let length = validUTF8Length(at: index) else {
            throw syntaxError("invalid UTF-8 byte 0x\(String(text[index], radix: 16, uppercase: true))")
        }
        return length
    }

    private func validUTF8Length(at position: Int) -> Int? {
        guard let lead = peek(at: position) else { return nil }
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xE1...0xEF: length = 3
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        case 0xF1...0xF3: length = 4
        default: return nil
        }
        guard let second = peek(at: position + 1), secondRange.contains(second) else { return nil }
        for offset in 2..<length {
            guard let byte = peek(at: position + offset), (0x80...0xBF).contains(byte) else { return nil }
        }
        return length
    }

    // MARK: Helpers

    private func peek() -> UInt8? { index < text.count ? text[index] : nil }

    private func peek(at position: Int) -> UInt8? {
        position >= 0 && position < text.count ? text[position] : nil
    }

    private mutating func skipWhitespace() {
        while let byte = peek(),
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
                || byte == UInt8(ascii: "\t")
        {
            index += 1
        }
    }

    /// Names what is at `position` for a message: `'}'`, `NaN`, `a comment`, `the end of the text`.
    private func found(at position: Int? = nil) -> String {
        let position = position ?? index
        guard let byte = peek(at: position) else { return "the end of the text" }
        switch byte {
        case UInt8(ascii: "/")
        where peek(at: position + 1) == UInt8(ascii: "/") || peek(at: position + 1) == UInt8(ascii: "*"):
            return "a comment (JSON has none)"
        case UInt8(ascii: "'"):
            return "a single quote (JSON strings use double quotes)"
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"):
            var end = position
            while end - position < 24, let next = peek(at: end), isWordByte(next) { end += 1 }
            return "'\(String(decoding: text[position..<end], as: UTF8.self))'"
        case ..<0x20:
            return "control character U+\(hex4(UInt32(byte)).uppercased())"
        case ..<0x80:
            return "'\(Character(Unicode.Scalar(byte)))'"
        default:
            guard let length = validUTF8Length(at: position) else {
                return "the byte 0x\(String(byte, radix: 16, uppercase: true)), which is not UTF-8"
            }
            let scalar = String(decoding: text[position..<position + length], as: UTF8.self).unicodeScalars.first!
            return "'\(scalar)' (U+\(hex4(scalar.value).uppercased()))"
        }
    }

    private func syntaxError(_ message: String) -> ProtoJSONError {
        ProtoJSONError(.syntax(message), position: JSONPosition(offset: index, in: text))
    }
}
