import CProtobufC

/// An enum type as compiled by protoc-c: its values by name and number.
public final class EnumSchema: Sendable, Hashable, CustomStringConvertible {
    public struct Value: Sendable, Hashable {
        /// The name in the .proto file (`ROLE_CUSTOMER`).
        public let name: String
        public let number: Int32
    }

    /// `yedi.account.Role`
    public let fullName: String
    public let name: String
    /// Ordered by number.
    public let values: [Value]

    init(descriptor: UnsafePointer<ProtobufCEnumDescriptor>) {
        let raw = descriptor.pointee
        precondition(raw.magic == PROTOBUF_C__ENUM_DESCRIPTOR_MAGIC, "not a protobuf-c enum descriptor")
        fullName = String(cString: raw.name)
        name = String(cString: raw.short_name)
        values = UnsafeBufferPointer(start: raw.values, count: Int(raw.n_values)).map {
            Value(name: String(cString: $0.name), number: Int32($0.value))
        }
    }

    public static func named(_ fullName: String) -> EnumSchema {
        guard let schema = SchemaRegistry.shared.enumSchema(named: fullName) else {
            preconditionFailure("no protobuf-c descriptor for \(fullName): regenerate with proto/generate.sh")
        }
        return schema
    }

    public static func lookup(_ fullName: String) -> EnumSchema? {
        SchemaRegistry.shared.enumSchema(named: fullName)
    }

    public static var all: [EnumSchema] { SchemaRegistry.shared.enums }

    public func value(named name: String) -> Value? { values.first { $0.name == name } }

    public func value(number: Int32) -> Value? { values.first { $0.number == number } }

    public var description: String { fullName }

    public static func == (lhs: EnumSchema, rhs: EnumSchema) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
