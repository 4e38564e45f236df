/// A field value of a `DynamicMessage`, typed as the schema stores it.
public enum DynamicValue: Sendable, Hashable {
    case int32(Int32)
    case int64(Int64)
    case uint32(UInt32)
    case uint64(UInt64)
    case float(Float)
    case double(Double)
    case bool(Bool)
    /// An enum value by number; numbers the schema does not name are kept.
    case enumValue(Int32)
    case string(String)
    case bytes([UInt8])
    case message(DynamicMessage)
    /// The values of a repeated field.
    case list([DynamicValue])

    /// Whether proto3 would leave this value off the wire (outside oneofs).
    var isProto3Default: Bool {
        switch self {
        case .int32(let v): v == 0
        case .int64(let v): v == 0
        case .uint32(let v): v == 0
        case .uint64(let v): v == 0
        case .float(let v): v.bitPattern == 0
        case .double(let v): v.bitPattern == 0
        case .bool(let v): !v
        case .enumValue(let v): v == 0
        case .string(let v): v.isEmpty
        case .bytes(let v): v.isEmpty
        case .message: false
        case .list(let v): v.isEmpty
        }
    }
}
