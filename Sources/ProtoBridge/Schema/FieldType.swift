import CProtobufC

/// The protobuf type of a field, as protobuf-c describes it.
public enum FieldType: Sendable, Hashable, CaseIterable {
    case int32, sint32, sfixed32
    case int64, sint64, sfixed64
    case uint32, fixed32
    case uint64, fixed64
    case float, double
    case bool
    case `enum`
    case string
    case bytes
    case message

    init(_ raw: ProtobufCType) {
        switch raw {
        case PROTOBUF_C_TYPE_INT32: self = .int32
        case PROTOBUF_C_TYPE_SINT32: self = .sint32
        case PROTOBUF_C_TYPE_SFIXED32: self = .sfixed32
        case PROTOBUF_C_TYPE_INT64: self = .int64
        case PROTOBUF_C_TYPE_SINT64: self = .sint64
        case PROTOBUF_C_TYPE_SFIXED64: self = .sfixed64
        case PROTOBUF_C_TYPE_UINT32: self = .uint32
        case PROTOBUF_C_TYPE_FIXED32: self = .fixed32
        case PROTOBUF_C_TYPE_UINT64: self = .uint64
        case PROTOBUF_C_TYPE_FIXED64: self = .fixed64
        case PROTOBUF_C_TYPE_FLOAT: self = .float
        case PROTOBUF_C_TYPE_DOUBLE: self = .double
        case PROTOBUF_C_TYPE_BOOL: self = .bool
        case PROTOBUF_C_TYPE_ENUM: self = .enum
        case PROTOBUF_C_TYPE_STRING: self = .string
        case PROTOBUF_C_TYPE_BYTES: self = .bytes
        default: self = .message
        }
    }

    /// The name used in .proto files.
    public var protoName: String {
        switch self {
        case .int32: "int32"
        case .sint32: "sint32"
        case .sfixed32: "sfixed32"
        case .int64: "int64"
        case .sint64: "sint64"
        case .sfixed64: "sfixed64"
        case .uint32: "uint32"
        case .fixed32: "fixed32"
        case .uint64: "uint64"
        case .fixed64: "fixed64"
        case .float: "float"
        case .double: "double"
        case .bool: "bool"
        case .enum: "enum"
        case .string: "string"
        case .bytes: "bytes"
        case .message: "message"
        }
    }

    /// How the value sits in protoc-c's C struct; types sharing a storage share a Swift type.
    var storage: FieldStorage {
        switch self {
        case .int32, .sint32, .sfixed32: .int32
        case .int64, .sint64, .sfixed64: .int64
        case .uint32, .fixed32: .uint32
        case .uint64, .fixed64: .uint64
        case .float: .float
        case .double: .double
        case .bool: .bool
        case .enum: .enum
        case .string: .string
        case .bytes: .bytes
        case .message: .message
        }
    }

    /// The wire type of one unpacked value.
    var wireType: WireType {
        switch self {
        case .int32, .sint32, .int64, .sint64, .uint32, .uint64, .bool, .enum: .varint
        case .sfixed32, .fixed32, .float: .fixed32
        case .sfixed64, .fixed64, .double: .fixed64
        case .string, .bytes, .message: .lengthDelimited
        }
    }
}

/// The C representation of a field's value in a protoc-c struct.
enum FieldStorage: Sendable {
    case int32, int64, uint32, uint64, float, double
    /// `protobuf_c_boolean`, a C `int`.
    case bool
    /// A C enum, forced to `int` size by protoc-c.
    case `enum`
    /// `char *`, NUL-terminated.
    case string
    /// `ProtobufCBinaryData`.
    case bytes
    /// A pointer to the nested message's struct.
    case message

    var byteCount: Int {
        switch self {
        case .int32, .uint32, .float, .bool, .enum: 4
        case .int64, .uint64, .double: 8
        case .string, .message: MemoryLayout<UnsafeRawPointer>.size
        case .bytes: MemoryLayout<ProtobufCBinaryData>.stride
        }
    }
}

/// Protobuf wire types (groups are not supported by protobuf-c).
enum WireType: UInt8, Sendable {
    case varint = 0
    case fixed64 = 1
    case lengthDelimited = 2
    case startGroup = 3
    case endGroup = 4
    case fixed32 = 5
}
