import NIOCore

/// A message type generated from proto/. Encoding and decoding go through protobuf-c.
///
/// ```swift
/// let bytes = try user.serializedBytes()
/// let again = try YediAccount.User(serializedBytes: bytes)
/// ```
public protocol ProtoMessage: Sendable, Hashable {
    /// The protobuf-c schema the type is packed and unpacked with.
    static var schema: MessageSchema { get }

    /// Writes every field (generated).
    func encode(to encoder: inout MessageEncoder) throws(ProtoEncodingError)

    /// Reads every field (generated).
    init(from decoder: MessageDecoder) throws(ProtoDecodingError)
}

extension ProtoMessage {
    /// The protobuf wire form of the message.
    public func serializedBytes() throws(ProtoEncodingError) -> [UInt8] {
        try ProtobufCCodec.withPackedMessage(schema: Self.schema, fill: encode(to:)) { message, size in
            [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
                ProtobufCCodec.pack(message, into: UnsafeMutableRawBufferPointer(buffer))
                initialized = size
            }
        }
    }

    /// Appends the wire form to `buffer` and returns the number of bytes written.
    @discardableResult
    public func serialize(into buffer: inout ByteBuffer) throws(ProtoEncodingError) -> Int {
        try ProtobufCCodec.withPackedMessage(schema: Self.schema, fill: encode(to:)) { message, size in
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { output in
                ProtobufCCodec.pack(message, into: UnsafeMutableRawBufferPointer(rebasing: output[..<size]))
                return size
            }
        }
    }

    /// The size of the wire form.
    public func serializedSize() throws(ProtoEncodingError) -> Int {
        try ProtobufCCodec.withPackedMessage(schema: Self.schema, fill: encode(to:)) { _, size in size }
    }

    /// Decodes the wire form; throws for anything malformed, never crashes.
    public init(serializedBytes bytes: [UInt8]) throws(ProtoDecodingError) {
        let result: Result<Self, ProtoDecodingError> = bytes.withUnsafeBytes { raw in
            Result { () throws(ProtoDecodingError) in try Self(unsafeBytes: raw) }
        }
        self = try result.get()
    }

    /// Decodes the readable bytes of `buffer` (the reader index does not move).
    public init(buffer: ByteBuffer) throws(ProtoDecodingError) {
        let result: Result<Self, ProtoDecodingError> = buffer.withUnsafeReadableBytes { raw in
            Result { () throws(ProtoDecodingError) in try Self(unsafeBytes: raw) }
        }
        self = try result.get()
    }

    init(unsafeBytes raw: UnsafeRawBufferPointer) throws(ProtoDecodingError) {
        self = try ProtobufCCodec.unpack(schema: Self.schema, bytes: raw) { decoder throws(ProtoDecodingError) in
            try Self(from: decoder)
        }
    }
}
