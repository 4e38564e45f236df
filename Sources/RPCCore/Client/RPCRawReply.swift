import NIOCore

/// A unary response as bytes, with its trailing metadata.
public struct RPCRawReply: Sendable {
    /// The response as received: a slice of the connection's receive buffer, decoded once by the caller.
    var buffer: ByteBuffer
    public var trailers: Metadata

    init(buffer: ByteBuffer, trailers: Metadata) {
        self.buffer = buffer
        self.trailers = trailers
    }

    /// The serialized response (a copy).
    public var payload: [UInt8] { Array(buffer.readableBytesView) }
}
