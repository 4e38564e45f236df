import ProtoBridge

/// Reads proto3 JSON into a `DynamicMessage` of a schema known only at run time (the probe's request).
///
/// ```swift
/// let request = try ProtoJSONDecoder().decode(#"{"email": "a@b.kr"}"#, as: schema)
/// ```
///
/// Accepts what proto3's JSON mapping allows, so text written by hand or by another implementation works:
/// JSON names and original proto names; 64-bit integers as strings or numbers; 32-bit integers as numbers
/// or numeric strings; `"NaN"`, `"Infinity"`, `"-Infinity"`; standard or URL-safe base64, padded or not;
/// enums by name or number; `null` for "unset". Everything else is refused with an error that names the
/// field path and the line and column, because a guessed conversion would send the server a request the
/// person did not write.
public struct ProtoJSONDecoder: Sendable {
    public init() {}

    public func decode(_ json: String, as schema: MessageSchema) throws(ProtoJSONError) -> DynamicMessage {
        try decode(utf8: Array(json.utf8), as: schema)
    }

    /// JSON text as UTF-8 bytes (a file, stdin); invalid UTF-8 is a syntax error.
    public func decode(utf8 json: [UInt8], as schema: MessageSchema) throws(ProtoJSONError) -> DynamicMessage {
        let root = try JSONParser.parse(json)
        return try MessageReader(text: json).message(root, schema: schema, path: "")
    }
}

/// Maps a parsed tree onto a schema; holds the text only to turn offsets into lines and columns.
private struct MessageReader {
    let text: [UInt8]

    func message(_ value: JSONValue, schema: MessageSchema, path: String) throws(ProtoJSONError) -> DynamicMessage {
        guard case .object(let members) = value.content else {
            throw error(.wrongType(expected: "an object (\(schema.fullName))", found: value.summary), path, value)
        }
        var message = DynamicMessage(schema: schema)
        var keyOfField: [Int: String] = [:]
        var keyOfOneof: [Int: String] = [:]
        for member in members {
            let memberPath = join(path, member.key)
            guard let field = field(named: member.key, in: schema) else {
                throw ProtoJSONError(
                    .unknownField(messageType: schema.fullName, suggestion: suggestion(for: member.key, in: schema)),
                    path: memberPath, position: position(member.keyOffset))
            }
            if let firstKey = keyOfField.updateValue(member.key, forKey: field.number) {
                throw ProtoJSONError(
                    .duplicateField(firstKey: join(path, firstKey)), path: memberPath,
                    position: position(member.keyOffset))
            }
            // null is "unset", for every field: it also leaves a oneof free for another member.
            if case .null = member.value.content { continue }
            if let oneof = field.oneofID, let firstKey = keyOfOneof.updateValue(member.key, forKey: oneof) {
                throw ProtoJSONError(
                    .oneofConflict(firstKey: join(path, firstKey)), path: memberPath,
                    position: position(member.keyOffset))
            }
            message.set(try fieldValue(member.value, field: field, path: memberPath), forField: field.number)
        }
        return message
    }

    /// Exact, case-sensitive match on the JSON name or the proto name. Compared as UTF-8 because Swift's
    /// `==` treats canonically equivalent strings as equal (the Kelvin sign would match `K`).
    private func field(named key: String, in schema: MessageSchema) -> FieldSchema? {
        schema.fields.first { $0.jsonName.utf8.elementsEqual(key.utf8) }
            ?? schema.fields.first { $0.name.utf8.elementsEqual(key.utf8) }
    }

    private func fieldValue(_ value: JSONValue, field: FieldSchema, path: String) throws(ProtoJSONError)
        -> DynamicValue
    {
        guard field.isRepeated else { return try single(value, field: field, path: path) }
        guard case .array(let elements) = value.content else {
            throw error(
                .wrongType(expected: "an array (repeated \(elementTypeName(field)))", found: value.summary), path, value
            )
        }
        var items: [DynamicValue] = []
        items.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            items.append(try single(element, field: field, path: "\(path)[\(index)]"))
        }
        return .list(items)
    }

    private func single(_ value: JSONValue, field: FieldSchema, path: String) throws(ProtoJSONError) -> DynamicValue {
        switch field.type {
        case .int32, .sint32, .sfixed32: return .int32(try integer(value, Int32.self, field: field, path: path))
        case .int64, .sint64, .sfixed64: return .int64(try integer(value, Int64.self, field: field, path: path))
        case .uint32, .fixed32: return .uint32(try integer(value, UInt32.self, field: field, path: path))
        case .uint64, .fixed64: return .uint64(try integer(value, UInt64.self, field: field, path: path))
        case .float: return .float(try floatingPoint(value, Float.self, field: field, path: path))
        case .double: return .double(try floatingPoint(value, Double.self, field: field, path: path))
        case .bool:
            guard case .bool(let flag) = value.content else {
                throw error(.wrongType(expected: typeName(field), found: value.summary), path, value)
            }
            return .bool(flag)
        case .string:
            guard case .string(let text) = value.content else {
                throw error(.wrongType(expected: typeName(field), found: value.summary), path, value)
            }
            if text.utf8.contains(0) { throw error(.stringContainsNUL, path, value) }
            return .string(text)
        case .bytes:
            guard case .string(let text) = value.content else {
                throw error(.wrongType(expected: typeName(field), found: value.summary), path, value)
            }
            do throws(Base64.DecodingFailure) {
                return .bytes(try Base64.decode(text))
            } catch {
                throw self.error(.invalidBase64(error.reason), path, value)
            }
        case .enum:
            return .enumValue(try enumNumber(value, field: field, path: path))
        case .message:
            guard case .object = value.content, let schema = field.messageSchema else {
                throw error(.wrongType(expected: typeName(field), found: value.summary), path, value)
            }
            return .message(try message(value, schema: schema, path: path))
        }
    }

    // MARK: Scalars

    /// A number, or a string holding one (proto3 JSON allows both for every integer type).
    private func integer<T: FixedWidthInteger>(_ value: JSONValue, _: T.Type, field: FieldSchema, path: String)
        throws(ProtoJSONError) -> T
    {
        let literal: String
        switch value.content {
        case .number(let text), .string(let text): literal = text
        default: throw error(.wrongType(expected: typeName(field), found: value.summary), path, value)
        }
        switch JSONNumber.integer(literal) {
        case .value(let exact):
            guard let result = T(exactly: exact) else {
                throw error(.outOfRange(expected: typeName(field), found: value.summary), path, value)
            }
            return result
        case .outOfRange: throw error(.outOfRange(expected: typeName(field), found: value.summary), path, value)
        case .notAnInteger: throw error(.notAnInteger(expected: typeName(field), found: value.summary), path, value)
        case .notANumber: throw error(.wrongType(expected: typeName(field), found: value.summary), path, value)
        }
    }

    private func floatingPoint<F: BinaryFloatingPoint & LosslessStringConvertible>(
        _ value: JSONValue, _: F.Type, field: FieldSchema, path: String
    ) throws(ProtoJSONError) -> F {
        let literal: String
        switch value.content {
        case .number(let text):
            literal = text
        case .string("NaN"): return .nan
        case .string("Infinity"): return .infinity
        case .string("-Infinity"): return -.infinity
        case .string(let text) where JSONNumber.isValid(text):
            literal = text
        default:
            throw error(.wrongType(expected: typeName(field), found: value.summary), path, value)
        }
        // The literal is valid JSON, so only a magnitude beyond the type's range can make it infinite.
        guard let result = F(literal), result.isFinite else {
            throw error(.outOfRange(expected: typeName(field), found: value.summary), path, value)
        }
        return result
    }

    /// A value name, or any int32 (numbers this build does not name are kept, as on the wire).
    private func enumNumber(_ value: JSONValue, field: FieldSchema, path: String) throws(ProtoJSONError) -> Int32 {
        let enumType = field.enumSchema?.fullName ?? "enum"
        switch value.content {
        case .string(let name):
            guard let number = field.enumSchema?.values.first(where: { $0.name.utf8.elementsEqual(name.utf8) })?.number
            else { throw error(.unknownEnumValue(enumType: enumType, found: value.summary), path, value) }
            return number
        case .number:
            return try integer(value, Int32.self, field: field, path: path)
        default:
            throw error(.wrongType(expected: "a \(enumType) name or number", found: value.summary), path, value)
        }
    }

    // MARK: Error messages

    /// How an error names what the field takes: `an int32`, `a uint64`, `an object (yedi.common.LocalDate)`.
    private func typeName(_ field: FieldSchema) -> String {
        switch field.type {
        case .int32, .int64: "an \(field.type.protoName)"
        case .bool: "true or false"
        case .bytes: "a base64 string"
        case .enum: "a \(field.enumSchema?.fullName ?? "enum") name or number"
        case .message: "an object (\(field.messageSchema?.fullName ?? "message"))"
        default: "a \(field.type.protoName)"
        }
    }

    /// `string`, `yedi.common.LocalDate`: how the .proto file names the element type.
    private func elementTypeName(_ field: FieldSchema) -> String {
        field.messageSchema?.fullName ?? field.enumSchema?.fullName ?? field.type.protoName
    }

    /// The field name a typo away from `key`, if one is close enough to be a likely fix.
    private func suggestion(for key: String, in schema: MessageSchema) -> String? {
        let typed = Array(key.lowercased().unicodeScalars)
        guard typed.count <= 64 else { return nil }
        let allowed = max(1, min(3, typed.count / 3))
        var best: (name: String, distance: Int)?
        for field in schema.fields {
            for candidate in [field.jsonName, field.name] {
                let distance = editDistance(typed, Array(candidate.lowercased().unicodeScalars))
                if distance <= allowed, distance < best?.distance ?? .max { best = (candidate, distance) }
            }
        }
        return best?.name
    }

    private func position(_ offset: Int) -> JSONPosition { JSONPosition(offset: offset, in: text) }

    private func error(_ problem: ProtoJSONError.Problem, _ path: String, _ value: JSONValue) -> ProtoJSONError {
        ProtoJSONError(problem, path: path, position: position(value.offset))
    }
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours each
/// cost 1, so `nmae` is one edit from `name`.
func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var previousRow: [Int] = []
    var row = Array(0...b.count)
    for i in 1...a.count {
        let beforePrevious = previousRow
        previousRow = row
        row = [i] + [Int](repeating: 0, count: b.count)
        for j in 1...b.count {
            let cost = a[i - 1] == b[j - 1] ? 0 : 1
            row[j] = min(previousRow[j] + 1, row[j - 1] + 1, previousRow[j - 1] + cost)
            if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                row[j] = min(row[j], beforePrevious[j - 2] + 1)
            }
        }
    }
    return row[b.count]
}
