import ProtoBridge

/// Messages of any schema with every field set to a non-default value, built from the protobuf-c
/// descriptors so that a new message or field is covered without anyone listing it.
public enum SampleMessages {
    /// One MiB of patterned bytes, used for singular `bytes` fields in one of the variants.
    public static let oneMebibyte: [UInt8] = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }

    /// Samples of `schema`. Each variant sets every field outside oneofs; variant k sets member k of
    /// each oneof (wrapping around), so the variants together cover every oneof member.
    public static func variants(of schema: MessageSchema) -> [DynamicMessage] {
        let count = max(3, largestOneof(in: schema))
        return (0..<count).map { fill(schema, variant: $0, depth: 0) }
    }

    /// The largest number of members of one oneof in `schema` or any message it contains.
    static func largestOneof(in schema: MessageSchema) -> Int {
        var largest = 0
        var seen: Set<String> = []
        func visit(_ schema: MessageSchema) {
            guard seen.insert(schema.fullName).inserted else { return }
            for field in schema.fields {
                if field.oneofID != nil { largest = max(largest, schema.oneofMembers(of: field).count) }
                if let nested = field.messageSchema { visit(nested) }
            }
        }
        visit(schema)
        return largest
    }

    public static func fill(_ schema: MessageSchema, variant: Int, depth: Int) -> DynamicMessage {
        var message = DynamicMessage(schema: schema)
        for field in schema.fields {
            if field.oneofID != nil {
                let members = schema.oneofMembers(of: field)
                guard members[variant % members.count].number == field.number else { continue }
            }
            let value: DynamicValue
            if field.isRepeated {
                value = .list(listValues(for: field, variant: variant, depth: depth))
            } else {
                value = singleValue(for: field, variant: variant, depth: depth)
            }
            message.set(value, forField: field.number)
        }
        return message
    }

    static func singleValue(for field: FieldSchema, variant: Int, depth: Int) -> DynamicValue {
        let pick = variant % 3
        switch field.type {
        case .int32, .sint32, .sfixed32: return .int32([Int32.min, Int32.max, -1][pick])
        case .int64, .sint64, .sfixed64: return .int64([Int64.min, Int64.max, -42][pick])
        case .uint32, .fixed32: return .uint32([UInt32.max, 1, 7][pick])
        case .uint64, .fixed64: return .uint64([UInt64.max, 1, 1 << 63][pick])
        case .float: return .float([-1.5, 3.25e10, .leastNonzeroMagnitude][pick])
        case .double: return .double([-1234.5678, .greatestFiniteMagnitude, 37.5665][pick])
        case .bool: return .bool(true)
        case .string:
            return .string(
                ["예디 헤어 \(field.name) ✂️💇‍♀️", "이모지 🙌😎💚🌹💪 \(field.number)", "\"quoted\" \\ back\nslash"][pick])
        case .bytes:
            return .bytes([[0, 1, 2, 0xFF, 0x80], depth == 0 ? oneMebibyte : [9, 9], [0]][pick])
        case .enum:
            let values = field.enumSchema!.values
            // Variant 1 uses a number the schema does not know: it must survive the round trip.
            return .enumValue([values.last!.number, 999, values[min(1, values.count - 1)].number][pick])
        case .message:
            return .message(fill(field.messageSchema!, variant: variant, depth: depth + 1))
        }
    }

    static func listValues(for field: FieldSchema, variant: Int, depth: Int) -> [DynamicValue] {
        switch field.type {
        case .string: return [.string("첫째 🥇"), .string(""), .string("third")]
        case .bytes: return [.bytes([]), .bytes([1, 2, 3])]
        case .enum:
            return [.enumValue(field.enumSchema!.values.last!.number), .enumValue(0), .enumValue(12345)]
        case .message:
            return [
                .message(fill(field.messageSchema!, variant: variant, depth: depth + 1)),
                .message(fill(field.messageSchema!, variant: variant + 1, depth: depth + 1)),
            ]
        default:
            return [
                singleValue(for: field, variant: 0, depth: depth),
                singleValue(for: field, variant: 1, depth: depth),
                singleValue(for: field, variant: 2, depth: depth),
            ]
        }
    }
}
