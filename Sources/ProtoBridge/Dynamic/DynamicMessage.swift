/// A message of any schema, driven by the protobuf-c descriptor instead of generated code.
///
/// Tools that only know a type by name at run time (the CLI probe) build and read these; tests use
/// them to fill every field of every generated type. It encodes and decodes through the same bridge.
public struct DynamicMessage: Sendable, Hashable {
    public let schema: MessageSchema
    /// Field number → value, holding only what would go on the wire: proto3 defaults outside oneofs
    /// are absent, and at most one member of each oneof is present.
    public private(set) var values: [Int: DynamicValue] = [:]

    public init(schema: MessageSchema) {
        self.schema = schema
    }

    public subscript(number: Int) -> DynamicValue? { values[number] }

    /// Sets (or, with `nil`, clears) a field. Setting a oneof member clears the other members.
    /// The value's type is checked when the message is encoded.
    public mutating func set(_ value: DynamicValue?, forField number: Int) {
        guard let field = schema.field(number: number) else {
            values[number] = value
            return
        }
        if value != nil, field.oneofID != nil {
            for member in schema.oneofMembers(of: field) { values[member.number] = nil }
        }
        if let value, field.oneofID == nil, value.isProto3Default {
            values[number] = nil
        } else {
            values[number] = value
        }
    }

    public func serializedBytes() throws(ProtoEncodingError) -> [UInt8] {
        var builder = MessageBuilder(schema: schema)
        defer { builder.release() }
        try encodeFields(to: &builder.encoder)
        return builder.bytes()
    }

    public init(schema: MessageSchema, serializedBytes bytes: [UInt8]) throws(ProtoDecodingError) {
        let unpacked = try UnpackedMessage(schema: schema, bytes: bytes)
        defer { unpacked.release() }
        try self.init(decoding: unpacked.decoder)
    }

    func encodeFields(to encoder: inout MessageEncoder) throws(ProtoEncodingError) {
        for (number, value) in values.sorted(by: { $0.key < $1.key }) {
            try encoder.write(value, field: number)
        }
    }

    init(decoding decoder: MessageDecoder) throws(ProtoDecodingError) {
        self.init(schema: decoder.schema)
        for field in decoder.schema.codecFields {
            if let value = try decoder.dynamicValue(of: field) { values[Int(field.number)] = value }
        }
    }
}
