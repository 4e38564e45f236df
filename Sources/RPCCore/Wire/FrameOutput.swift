import Logging
import NIOCore
import ProtoBridge

/// Writes frames to a connection and flushes once per event-loop tick, however many were written in
/// it: the replies (or requests) of one tick leave in one TLS record and one `write(2)`.
///
/// Shared by the server's and the client's connection handlers; confined to the channel's event loop.
final class FrameOutput {
    private let context: ChannelHandlerContext
    private let logger: Logger
    private var flushScheduled = false

    init(context: ChannelHandlerContext, logger: Logger) {
        self.context = context
        self.logger = logger
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

    /// Writes a frame `encode` made and schedules a flush; `promise` completes once it is written to
    /// the socket (or failed with the connection).
    func write(encoded buffer: ByteBuffer, promise: EventLoopPromise<Void>? = nil) {
        context.write(NIOAny(buffer), promise: promise)
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
        context.flush()
    }
}
