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
        try ProtobufCCodec.withPackedMessage(schema: schema, fill: encodeFields(to:)) { message, size in
            [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
                ProtobufCCodec.pack(message, into: UnsafeMutableRawBufferPointer(buffer))
                initialized = size
            }
        }
    }

    public init(schema: MessageSchema, serializedBytes bytes: [UInt8]) throws(ProtoDecodingError) {
        let result: Result<DynamicMessage, ProtoDecodingError> = bytes.withUnsafeBytes { raw in
            Result { () throws(ProtoDecodingError) in
                try ProtobufCCodec.unpack(schema: schema, bytes: raw) { decoder throws(ProtoDecodingError) in
                    try DynamicMessage(decoding: decoder)
                }
            }
        }
        self = try result.get()
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
