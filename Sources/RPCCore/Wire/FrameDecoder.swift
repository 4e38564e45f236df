import NIOCore

/// Splits the byte stream into frames: a 4-byte big-endian length N, then N bytes of a `yedi.rpc.Frame`.
///
/// The length is checked against the limit before anything is buffered for the frame, so a peer cannot
/// make us allocate more than `maxFrameBytes`. It passes on each frame's bytes (a slice of the bytes
/// received, no copy) for the connection's handler to read with its `InboundFrameReader`: a
/// `ByteBuffer` travels through the pipeline unboxed, where a read `InboundFrame` would be boxed into
/// an `NIOAny`, an allocation per frame. All frames that arrived in one read are passed on before the
/// read completes, so the handler can answer them in one flush.
struct FrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    let limit: FrameSizeLimit

    var maxFrameBytes: Int { limit.bytes }

    init(maxFrameBytes: Int) {
        self.init(limit: FrameSizeLimit(maxFrameBytes))
    }

    /// With a limit the connection's handler may change later (a client, on the server's SETTINGS).
    init(limit: FrameSizeLimit) {
        self.limit = limit
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        guard Int(length) <= maxFrameBytes else {
            throw WireError.frameTooLarge(length: Int(length), limit: maxFrameBytes)
        }
        guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        context.fireChannelRead(wrapInboundOut(buffer.readSlice(length: Int(length))!))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0 {
            let buffered = buffer.readableBytes
            buffer.moveReaderIndex(forwardBy: buffered)
            throw WireError.truncatedFrame(bufferedBytes: buffered)
        }
        return .needMoreData
    }
}
