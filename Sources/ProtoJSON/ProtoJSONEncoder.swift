import ProtoBridge

/// Writes a `DynamicMessage` as proto3's canonical JSON.
///
/// ```swift
/// let json = try ProtoJSONEncoder(style: .pretty).encode(message)
/// ```
///
/// Keys are the fields' JSON names (lowerCamelCase) in field-number order. 64-bit integers are strings,
/// because JavaScript (and `jq`) read every number as a double and would round ids and money; 32-bit
/// integers and floating-point values are numbers, with `"NaN"`, `"Infinity"` and `"-Infinity"` as
/// strings; bytes are padded standard base64; enums are value names, or numbers this build does not name.
public struct ProtoJSONEncoder: Sendable {
    public enum Style: Sendable, Hashable {
        /// No whitespace at all: one line, for logs and pipes.
        case compact
        /// Two-space indentation, one member or element per line, for people.
        case pretty
    }

    public var style: Style
    /// Also writes the fields that hold their default value (0, "", false, [], `null` for messages, the
    /// enum's zero value), so that a reader sees every field of the type. Oneof members appear only when
    /// set: writing all of them would set the whole oneof at once.
    public var emitDefaults: Bool

    public init(style: Style = .compact, emitDefaults: Bool = false) {
        self.style = style
        self.emitDefaults = emitDefaults
    }

    public func encode(_ message: DynamicMessage) throws(ProtoJSONError) -> String {
        String(decoding: try encodeUTF8(message), as: UTF8.self)
    }

    /// The JSON text as UTF-8 bytes, without the copy into a `String`.
    public func encodeUTF8(_ message: DynamicMessage) throws(ProtoJSONError) -> [UInt8] {
        var writer = JSONWriter(pretty: style == .pretty)
        try write(message, to: &writer, path: "")
        return writer.output
    }

    // MARK: Messages and fields

    private func write(_ message: DynamicMessage, to writer: inout JSONWriter, path: String) throws(ProtoJSONError) {
        let schema = message.schema
        if let stray = message.values.keys.sorted().first(where: { schema.field(number: $0) == nil }) {
            throw ProtoJSONError(.schemaMismatch("\(schema.fullName) has no field number \(stray)"), path: path)
        }
        writer.beginObject()
        for field in schema.fields {
            if let value = message[field.number] {
                writer.key(field.jsonName)
                try write(value, of: field, to: &writer, path: join(path, field.jsonName))
            } else if emitDefaults, field.oneofID == nil {
                writer.key(field.jsonName)
                writeDefault(of: field, to: &writer)
            }
        }
        writer.endObject()
    }

    private func write(_ value: DynamicValue, of field: FieldSchema, to writer: inout JSONWriter, path: String)
        throws(ProtoJSONError)
    {
        guard field.isRepeated else {
            try writeSingle(value, of: field, to: &writer, path: path)
            return
        }
        guard case .list(let items) = value else {
            throw ProtoJSONError(.schemaMismatch("a repeated field holds a single value"), path: path)
        }
        writer.beginArray()
        for (index, item) in items.enumerated() {
            try writeSingle(item, of: field, to: &writer, path: "\(path)[\(index)]")
        }
        writer.endArray()
    }

    private func writeSingle(_ value: DynamicValue, of field: FieldSchema, to writer: inout JSONWriter, path: String)
        throws(ProtoJSONError)
    {
        switch (field.type, value) {
        case (.int32, .int32(let number)), (.sint32, .int32(let number)), (.sfixed32, .int32(let number)):
            writer.number(String(number))
        case (.uint32, .uint32(let number)), (.fixed32, .uint32(let number)):
            writer.number(String(number))
        case (.int64, .int64(let number)), (.sint64, .int64(let number)), (.sfixed64, .int64(let number)):
            writer.string(String(number))
        case (.uint64, .uint64(let number)), (.fixed64, .uint64(let number)):
            writer.string(String(number))
        case (.float, .float(let number)):
            writeFloatingPoint(number, to: &writer)
        case (.double, .double(let number)):
            writeFloatingPoint(number, to: &writer)
        case (.bool, .bool(let flag)):
            writer.bool(flag)
        case (.string, .string(let text)):
            writer.string(text)
        case (.bytes, .bytes(let bytes)):
            writer.base64(bytes)
        case (.enum, .enumValue(let number)):
            if let name = field.enumSchema?.value(number: number)?.name {
                writer.string(name)
            } else {
                writer.number(String(number))
            }
        case (.message, .message(let nested)):
            guard nested.schema == field.messageSchema else {
                throw ProtoJSONError(
                    .schemaMismatch("a \(nested.schema.fullName) where the schema has a \(field.description)"),
                    path: path)
            }
            try write(nested, to: &writer, path: path)
        default:
            throw ProtoJSONError(
                .schemaMismatch("a \(kind(of: value)) value does not fit the field \(field.description)"), path: path)
        }
    }

    /// The case of a value, for errors (printing the value itself could mean a mebibyte of bytes).
    private func kind(of value: DynamicValue) -> String {
        switch value {
        case .int32: "int32"
        case .int64: "int64"
        case .uint32: "uint32"
        case .uint64: "uint64"
        case .float: "float"
        case .double: "double"
        case .bool: "bool"
        case .enumValue: "enum"
        case .string: "string"
        case .bytes: "bytes"
        case .message: "message"
        case .list: "list"
        }
    }

    /// Numbers, except the three values JSON numbers cannot express.
    private func writeFloatingPoint<F: BinaryFloatingPoint & LosslessStringConvertible>(
        _ value: F, to writer: inout JSONWriter
    ) {
        if value.isNaN {
            writer.string("NaN")
        } else if value.isInfinite {
            writer.string(value < 0 ? "-Infinity" : "Infinity")
        } else {
            writer.number(JSONNumber.literal(value))
        }
    }

    private func writeDefault(of field: FieldSchema, to writer: inout JSONWriter) {
        if field.isRepeated {
            writer.beginArray()
            writer.endArray()
            return
        }
        switch field.type {
        case .int32, .sint32, .sfixed32, .uint32, .fixed32, .float, .double: writer.number("0")
        case .int64, .sint64, .sfixed64, .uint64, .fixed64: writer.string("0")
        case .bool: writer.bool(false)
        case .string, .bytes: writer.string("")
        case .enum:
            if let name = field.enumSchema?.value(number: 0)?.name {
                writer.string(name)
            } else {
                writer.number("0")
            }
        case .message: writer.null()
        }
    }
}

/// `designer.shop`, or just the key at the top level.
func join(_ path: String, _ key: String) -> String {
    path.isEmpty ? key : "\(path).\(key)"
}
