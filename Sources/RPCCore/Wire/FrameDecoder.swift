import NIOCore
import ProtoBridge

/// Splits the byte stream into frames: a 4-byte big-endian length N, then N bytes of a `yedi.rpc.Frame`.
///
/// The length is checked against the limit before anything is buffered for the frame, so a peer cannot
/// make us allocate more than `maxFrameBytes`. It passes each frame on read (`InboundFrame`), its
/// payload a slice of the bytes received (no copy); a frame that does not parse is an error, as the
/// connection cannot be trusted after it. All frames that arrived in one read are passed on before the
/// read completes, so the handler can answer them in one flush.
struct FrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = InboundFrame

    let limit: FrameSizeLimit
    /// Request metadata entries kept per frame; more are counted only (`InboundFrame.read`).
    var maxMetadataEntries = Int.max

    var maxFrameBytes: Int { limit.bytes }

    init(maxFrameBytes: Int, maxMetadataEntries: Int = .max) {
        self.init(limit: FrameSizeLimit(maxFrameBytes), maxMetadataEntries: maxMetadataEntries)
    }

    /// With a limit the connection's handler may change later (a client, on the server's SETTINGS).
    init(limit: FrameSizeLimit, maxMetadataEntries: Int = .max) {
        self.limit = limit
        self.maxMetadataEntries = maxMetadataEntries
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        guard Int(length) <= maxFrameBytes else {
            throw WireError.frameTooLarge(length: Int(length), limit: maxFrameBytes)
        }
        guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        let frame = try InboundFrame.read(
            buffer.readSlice(length: Int(length))!, maxMetadataEntries: maxMetadataEntries)
        context.fireChannelRead(wrapInboundOut(frame))
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
