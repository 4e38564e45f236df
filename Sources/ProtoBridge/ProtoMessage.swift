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

// Inlinable so that they specialise for each message type in the caller's module: the RPC path runs
// them for every call.
extension ProtoMessage {
    /// The protobuf wire form of the message.
    @inlinable
    public func serializedBytes() throws(ProtoEncodingError) -> [UInt8] {
        var builder = MessageBuilder(schema: Self.schema)
        defer { builder.release() }
        try encode(to: &builder.encoder)
        return builder.bytes()
    }

    /// Appends the wire form to `buffer` and returns the number of bytes written.
    @inlinable
    @discardableResult
    public func serialize(into buffer: inout ByteBuffer) throws(ProtoEncodingError) -> Int {
        var builder = MessageBuilder(schema: Self.schema)
        defer { builder.release() }
        try encode(to: &builder.encoder)
        return builder.write(into: &buffer)
    }

    /// Appends the wire form to a buffer that `header` makes once the size is known (with whatever
    /// must come before the message and depends on its size, such as a length prefix), and returns that
    /// buffer: the message is packed where it will be sent, not packed and then copied. `header`
    /// returns nil to stop (a message too large to send); so does this.
    @inlinable
    public func serialize(after header: (_ size: Int) -> ByteBuffer?) throws(ProtoEncodingError) -> ByteBuffer? {
        var builder = MessageBuilder(schema: Self.schema)
        defer { builder.release() }
        try encode(to: &builder.encoder)
        let size = builder.packedSize
        guard var buffer = header(size) else { return nil }
        builder.write(into: &buffer, size: size)
        return buffer
    }

    /// The size of the wire form.
    @inlinable
    public func serializedSize() throws(ProtoEncodingError) -> Int {
        var builder = MessageBuilder(schema: Self.schema)
        defer { builder.release() }
        try encode(to: &builder.encoder)
        return builder.packedSize
    }

    /// Decodes the wire form; throws for anything malformed, never crashes.
    @inlinable
    public init(serializedBytes bytes: [UInt8]) throws(ProtoDecodingError) {
        let unpacked = try UnpackedMessage(schema: Self.schema, bytes: bytes)
        defer { unpacked.release() }
        try self.init(from: unpacked.decoder)
    }

    /// Decodes the readable bytes of `buffer` (the reader index does not move).
    @inlinable
    public init(buffer: ByteBuffer) throws(ProtoDecodingError) {
        let unpacked = try UnpackedMessage(schema: Self.schema, buffer: buffer)
        defer { unpacked.release() }
        try self.init(from: unpacked.decoder)
    }
}
