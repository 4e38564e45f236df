import NIOCore
import ProtoBridge

/// A reply frame (a unary call's END with its response, or a stream's MESSAGE) built around its message
/// where the message is encoded: the length prefix is reserved, the payload field's tag and length
/// written once the message's size is known, the message packed after them, and the envelope's other
/// fields (call id, kind, trailers) appended after it before the length is filled in. The message is
/// never copied: the buffer it is packed into is the one written to the socket.
///
/// The payload comes first on the wire, then the other fields: a message may list its fields in any
/// order, and the trailers are only known once the interceptors returned. Every reader (ours, protobuf-c)
/// reads the same frame as if they were in field order.
struct ReplyFrame: Sendable {
    /// The frame so far: the reserved length prefix, then the payload field.
    private(set) var buffer: ByteBuffer
    /// The encoded message's size (its payload field's value).
    let messageBytes: Int
    /// Where the message starts in `buffer`.
    private let messageIndex: Int

    /// Bytes the envelope after the payload takes without trailers, at most: call id and kind (an
    /// unknown, negative kind is ten varint bytes, as protobuf writes an enum).
    private static let envelopeBytes = 1 + 10 + 1 + 10

    /// Encodes `message` into a new reply frame; a message the client could not receive is the server's
    /// fault. The buffer has room for the call id and kind after it; trailers, rare, may grow it.
    /// `reusing`: an empty buffer to encode into instead of a new one (`ReplyBufferPool`).
    static func encode(
        _ message: some ProtoMessage, maxPayloadBytes: Int, reusing recycled: consuming ByteBuffer? = nil
    ) throws(RPCError) -> ReplyFrame {
        var messageBytes = 0
        let buffer: ByteBuffer?
        // Moved, not copied: a second reference to its storage would make the first write copy it.
        var spare = consume recycled
        do {
            buffer = try message.serialize { size in
                messageBytes = size
                guard size <= maxPayloadBytes else { return nil }
                return header(messageBytes: size, reusing: &spare)
            }
        } catch {
            throw RPCError(code: .internalError, message: "the response could not be encoded")
        }
        guard let buffer else {
            throw RPCError(
                code: .resourceExhausted,
                message: "the response (\(messageBytes) bytes) exceeds the frame limit of \(maxPayloadBytes) bytes"
            )
        }
        return ReplyFrame(buffer: buffer, messageBytes: messageBytes)
    }

    private init(buffer: ByteBuffer, messageBytes: Int) {
        self.buffer = buffer
        self.messageBytes = messageBytes
        self.messageIndex = buffer.writerIndex - messageBytes
    }

    /// A reply frame around `payload`, copied into it (bytes that were not encoded here: raw handlers).
    init(payload: ByteBuffer) {
        var buffer = Self.header(messageBytes: payload.readableBytes)
        var payload = payload
        let messageBytes = buffer.writeBuffer(&payload)
        self.init(buffer: buffer, messageBytes: messageBytes)
    }

    /// The length prefix (to fill in) and the payload field's tag and length, in a buffer with room for
    /// the message and the envelope after it.
    private static func header(messageBytes: Int) -> ByteBuffer {
        var none: ByteBuffer? = nil
        return header(messageBytes: messageBytes, reusing: &none)
    }

    private static func header(messageBytes: Int, reusing spare: inout ByteBuffer?) -> ByteBuffer {
        let capacity = headerBytes(messageBytes) + messageBytes + envelopeBytes
        var buffer = spare.take() ?? ByteBufferAllocator().buffer(capacity: capacity)
        buffer.reserveCapacity(capacity)
        // `finish` fills the length in at the reader index: the frame starts there (a recycled buffer is
        // emptied to index 0).
        assert(buffer.readableBytes == 0, "a reply frame starts its buffer")
        buffer.write(reserving: headerBytes(messageBytes)) { out in
            out.uint32(0)  // the length prefix, filled in when the frame is finished
            guard messageBytes > 0 else { return }  // protobuf leaves an empty bytes field out
            out.byte(UInt8(payloadTag))
            out.varint(UInt64(messageBytes))
        }
        return buffer
    }

    private static func headerBytes(_ messageBytes: Int) -> Int {
        messageBytes > 0 ? 4 + 1 + ByteBuffer.varintBytes(UInt64(messageBytes)) : 4
    }

    /// What a finished frame keeps: nothing (an empty buffer shared by all, so finishing allocates none).
    private static let finished = ByteBuffer()

    /// Field 6 (`payload`), wire type 2 (length-delimited).
    private static let payloadTag = 6 << 3 | 2

    /// The encoded message, as a view of the frame (no copy).
    var message: ByteBuffer {
        buffer.getSlice(at: messageIndex, length: messageBytes)!
    }

    /// Appends the envelope's other fields (the call id, `kind`, and `trailers`) and fills in the length
    /// prefix: the frame to write. Mutating, so that the buffer is appended to in place: the caller
    /// must hold the only copy of it (a copy elsewhere would make the append copy the message).
    mutating func finish(callID: UInt64, kind: YediRPC.FrameKind, trailers: Metadata = [:])
        throws(ProtoEncodingError) -> ByteBuffer
    {
        var frame = buffer
        buffer = Self.finished  // `frame` holds the only reference now
        try frame.writeEnvelope(callID: callID, kind: kind, trailers: trailers)
        frame.setInteger(UInt32(frame.readableBytes - 4), at: frame.readerIndex)
        return frame
    }

    /// A frame without a message (a stream's END): its envelope alone.
    static func finishedWithoutMessage(callID: UInt64, kind: YediRPC.FrameKind, trailers: Metadata)
        throws(ProtoEncodingError) -> ByteBuffer
    {
        var frame = ReplyFrame(buffer: header(messageBytes: 0), messageBytes: 0)
        return try frame.finish(callID: callID, kind: kind, trailers: trailers)
    }
}

extension ByteBuffer {
    /// The call id and kind, written by hand (two varints), then the trailers as metadata entries.
    fileprivate mutating func writeEnvelope(callID: UInt64, kind: YediRPC.FrameKind, trailers: Metadata)
        throws(ProtoEncodingError)
    {
        let kind = UInt64(bitPattern: Int64(kind.rawValue))  // as protobuf writes an enum
        let bytes = WireCursor.varintFieldBytes(callID) + WireCursor.varintFieldBytes(kind)
        write(reserving: bytes) { out in
            out.varintField(1, callID)
            out.varintField(2, kind)
        }
        guard !trailers.isEmpty else { return }
        try writeMetadata(trailers)
    }
}
