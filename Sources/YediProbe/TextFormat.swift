import ProtoBridge

/// Renders a `DynamicMessage` in protobuf text format (what `protoc --decode` prints), for `--format text`.
///
/// Fields use their proto names, in field-number order; strings keep their UTF-8 text (Korean stays
/// readable) with quotes, backslashes and control characters escaped; bytes are escaped byte by byte,
/// non-printable ones in octal, so the output parses back with any text-format reader.
struct TextFormat {
    /// One field per line with two-space indentation (unary replies); otherwise one line per message
    /// (stream replies, like the JSON ones).
    var multiline: Bool
    /// Also prints unset scalar and enum fields outside oneofs with their zero values. Unset messages and
    /// empty repeated fields have no text-format spelling and stay absent.
    var emitDefaults: Bool

    func render(_ message: DynamicMessage) -> String {
        var lines: [String] = []
        append(message, indent: 0, to: &lines)
        return lines.joined(separator: multiline ? "\n" : " ")
    }

    private func append(_ message: DynamicMessage, indent: Int, to lines: inout [String]) {
        let prefix = multiline ? String(repeating: "  ", count: indent) : ""
        for field in message.schema.fields {
            guard let value = message[field.number] else {
                if emitDefaults, field.oneofID == nil, !field.isRepeated, let zero = defaultText(of: field) {
                    lines.append("\(prefix)\(field.name): \(zero)")
                }
                continue
            }
            let items: [DynamicValue]
            if case .list(let list) = value { items = list } else { items = [value] }
            for item in items {
                if case .message(let nested) = item {
                    lines.append("\(prefix)\(field.name) {")
                    append(nested, indent: indent + 1, to: &lines)
                    lines.append("\(prefix)}")
                } else {
                    lines.append("\(prefix)\(field.name): \(scalarText(item, of: field))")
                }
            }
        }
    }

    private func scalarText(_ value: DynamicValue, of field: FieldSchema) -> String {
        switch value {
        case .int32(let number): String(number)
        case .int64(let number): String(number)
        case .uint32(let number): String(number)
        case .uint64(let number): String(number)
        case .float(let number): floatingPointText(number)
        case .double(let number): floatingPointText(number)
        case .bool(let flag): flag ? "true" : "false"
        case .enumValue(let number): field.enumSchema?.value(number: number)?.name ?? String(number)
        case .string(let text): Self.quoted(text)
        case .bytes(let bytes): Self.quoted(bytes: bytes)
        case .message, .list: ""  // handled by the caller
        }
    }

    private func defaultText(of field: FieldSchema) -> String? {
        switch field.type {
        case .int32, .sint32, .sfixed32, .int64, .sint64, .sfixed64, .uint32, .fixed32, .uint64, .fixed64:
            "0"
        case .float, .double: "0"
        case .bool: "false"
        case .string, .bytes: "\"\""
        case .enum: field.enumSchema?.value(number: 0)?.name ?? "0"
        case .message: nil
        }
    }

    private func floatingPointText<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        return value.description
    }

    /// A string literal: UTF-8 text kept, `"`, `\` and control characters escaped.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: result += octal(UInt8(scalar.value))
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    /// A bytes literal: printable ASCII as is, everything else escaped.
    static func quoted(bytes: [UInt8]) -> String {
        var result = "\""
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""): result += "\\\""
            case UInt8(ascii: "\\"): result += "\\\\"
            case UInt8(ascii: "'"): result += "\\'"
            case UInt8(ascii: "\n"): result += "\\n"
            case UInt8(ascii: "\r"): result += "\\r"
            case UInt8(ascii: "\t"): result += "\\t"
            case 0x20..<0x7F: result.unicodeScalars.append(Unicode.Scalar(byte))
            default: result += octal(byte)
            }
        }
        return result + "\""
    }

    /// Three octal digits, so a following digit cannot extend the escape.
    private static func octal(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 8)
        return "\\" + String(repeating: "0", count: 3 - digits.count) + digits
    }
}
