import CProtobufC

/// One field of a message, as compiled by protoc-c.
public struct FieldSchema: Sendable, Hashable, CustomStringConvertible {
    /// The name in the .proto file (`created_at_ms`).
    public let name: String
    /// The proto3 JSON name (`createdAtMs`).
    public let jsonName: String
    public let number: Int
    public let type: FieldType
    public let isRepeated: Bool
    /// The full name of the message that declares this field.
    public let containingType: String
    /// Members of the same oneof share this value (the lowest field number of the oneof); `nil` outside oneofs.
    public let oneofID: Int?

    let codec: CodecField

    /// The schema of a `message` field's type.
    public var messageSchema: MessageSchema? {
        type == .message ? SchemaRegistry.shared.message(at: codec.nested) : nil
    }

    /// The schema of an `enum` field's type.
    public var enumSchema: EnumSchema? {
        type == .enum ? SchemaRegistry.shared.enumSchema(at: codec.nested) : nil
    }

    /// `yedi.account.User.name`
    public var fullName: String { "\(containingType).\(name)" }

    public var description: String {
        let typeName = messageSchema?.fullName ?? enumSchema?.fullName ?? type.protoName
        return "\(isRepeated ? "repeated " : "")\(typeName) \(name) = \(number)"
    }

    /// proto3's JSON name: underscores removed, the letter after each capitalised.
    static func jsonName(for protoName: String) -> String {
        var result = ""
        var capitalizeNext = false
        for character in protoName {
            if character == "_" {
                capitalizeNext = true
            } else if capitalizeNext {
                result += character.uppercased()
                capitalizeNext = false
            } else {
                result.append(character)
            }
        }
        return result
    }
}

/// What the codec needs of a field, as plain values: copied out of the schema without reference counting.
struct CodecField: @unchecked Sendable, Hashable {
    let number: Int32
    let type: FieldType
    let storage: FieldStorage
    let isRepeated: Bool
    let isOneof: Bool
    let isPacked: Bool
    /// Byte offset of the value (or of the array pointer, for repeated fields) in the C struct.
    let offset: Int
    /// Byte offset of the `n_` count (repeated) or the `_case` (oneof member).
    let quantifierOffset: Int
    /// The nested `ProtobufCMessageDescriptor` or `ProtobufCEnumDescriptor`; immutable static data.
    let nested: UnsafeRawPointer?

    init(_ raw: ProtobufCFieldDescriptor) {
        number = Int32(bitPattern: raw.id)
        type = FieldType(raw.type)
        storage = type.storage
        isRepeated = raw.label == PROTOBUF_C_LABEL_REPEATED
        isOneof = raw.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0
        isPacked = raw.flags & UInt32(PROTOBUF_C_FIELD_FLAG_PACKED.rawValue) != 0
        offset = Int(raw.offset)
        quantifierOffset = Int(raw.quantifier_offset)
        nested = raw.descriptor
    }
}
