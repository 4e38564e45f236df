import Logging
import NIOCore
import ProtoBridge

/// Writes frames to a connection and flushes once per event-loop tick, however many were written in
/// it: the replies (or requests) of one tick leave in one TLS record and one `write(2)`.
///
/// Shared by the server's and the client's connection handlers; confined to the channel's event loop.
///
/// Counted frames (the server's replies, which hold memory budget until written) are told back in
/// batches: the last counted frame is kept until the next write or the flush, and written with one
/// promise for the bytes of every counted frame since the previous batch. Writes complete in order, so
/// when it completes they all have; one promise per flush instead of one per reply.
final class FrameOutput {
    private let context: ChannelHandlerContext
    private let logger: Logger
    private var flushScheduled = false
    /// The latest counted frame, written at the next write or flush, and the bytes of its batch.
    private var heldCounted: ByteBuffer?
    private var batchBytes = 0
    /// Told the bytes of each batch of counted frames once it is written (or failed with the connection).
    var countedWritten: ((Int) -> Void)?
    /// Where counted frames go after the flush that handed them to TLS, to be encoded into again; nil:
    /// they are let go (the client's side).
    private let recycler: ReplyBufferPool?
    /// The counted frames written since the last flush, for `recycler`.
    private var written: [ByteBuffer] = []

    init(context: ChannelHandlerContext, logger: Logger, recycler: ReplyBufferPool? = nil) {
        self.context = context
        self.logger = logger
        self.recycler = recycler
    }

    /// Writes a connection frame (with `payload` as its payload field, if given) and schedules a flush.
    /// Its strings are ours, so encoding cannot fail; a call's frames go through `encode` instead, so
    /// that a failure ends the call.
    func write(_ frame: YediRPC.Frame, payload: ByteBuffer? = nil) {
        do {
            write(encoded: try encode(frame, payload: payload))
        } catch {
            logger.error("could not encode a frame: \(error)")
        }
    }

    /// `frame` with its length prefix (and `payload` as its payload field, if given).
    func encode(_ frame: YediRPC.Frame, payload: ByteBuffer? = nil) throws(ProtoEncodingError) -> ByteBuffer {
        var buffer = context.channel.allocator.buffer(
            capacity: 64 + frame.method.utf8.count + frame.payload.count + (payload?.readableBytes ?? 0)
        )
        if let payload {
            try buffer.writeFrame(frame, payload: payload)
        } else {
            try buffer.writeFrame(frame)
        }
        return buffer
    }

    /// A call's REQUEST frame, with its length prefix; entries repeating `previous`'s as
    /// `same_as_previous`.
    func encodeRequest(
        _ header: RequestHeader, callID: UInt64, timeoutMicros: UInt64, payload: ByteBuffer,
        repeating previous: Metadata?
    ) throws(ProtoEncodingError) -> ByteBuffer {
        var buffer = context.channel.allocator.buffer(capacity: header.frameBytes + payload.readableBytes)
        try buffer.writeRequestFrame(
            header, callID: callID, timeoutMicros: timeoutMicros, payload: payload, repeating: previous)
        return buffer
    }

    /// Writes a frame `encode` made and schedules a flush; `promise` completes once it is written to
    /// the socket (or failed with the connection).
    func write(encoded buffer: ByteBuffer, promise: EventLoopPromise<Void>? = nil) {
        writeHeldCounted()
        context.write(NIOAny(buffer), promise: promise)
        scheduleFlush()
    }

    /// Writes a counted frame (see the type's comment): its bytes come back through `countedWritten`.
    func write(counted buffer: ByteBuffer) {
        if let previous = heldCounted { context.write(NIOAny(previous), promise: nil) }
        if recycler != nil { written.append(buffer) }
        heldCounted = buffer
        batchBytes += buffer.readableBytes
        scheduleFlush()
    }

    /// The held counted frame, written with its batch's promise.
    private func writeHeldCounted() {
        guard let frame = heldCounted else { return }
        heldCounted = nil
        let bytes = batchBytes
        batchBytes = 0
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.assumeIsolated().whenComplete { _ in self.countedWritten?(bytes) }
        context.write(NIOAny(frame), promise: promise)
    }

    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        context.eventLoop.assumeIsolated().execute {
            self.flushNow()
        }
    }

    /// Flushes now what was written since the last flush (at read-complete, before closing).
    func flushNow() {
        guard flushScheduled else { return }
        flushScheduled = false
        writeHeldCounted()
        context.flush()
        guard let recycler, !written.isEmpty else { return }
        for frame in written { recycler.recycle(frame) }
        written.removeAll(keepingCapacity: true)
    }
}
