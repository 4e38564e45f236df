import NIOCore

/// Reply frames' buffers, used again once their bytes were encrypted: a reply is encoded into a buffer
/// of an earlier reply instead of a new one (a `ByteBuffer` costs two allocations: its storage object
/// and its bytes).
///
/// One per event loop, shared by that loop's connections, and bounded (a count and a size per buffer),
/// so what it keeps is a fixed amount per loop whatever the number of connections. Confined to its
/// loop: a task encoding elsewhere allocates as before.
///
/// Safe by copy-on-write: a buffer is put back after the flush that handed it to TLS, which has copied
/// or encrypted it by then and dropped its reference; if something still holds it (TLS waiting for
/// its handshake), the first write into the recycled buffer copies it, and nothing is overwritten.
final class ReplyBufferPool: @unchecked Sendable {
    // @unchecked: touched only on `eventLoop` (checked in debug builds).
    /// Buffers kept at most.
    static let maxBuffers = 64
    /// Larger buffers are let go: a rare large reply should not pin its memory.
    static let maxKeptCapacity = 4_096

    let eventLoop: any EventLoop
    private var free: [ByteBuffer] = []

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        free.reserveCapacity(Self.maxBuffers)
    }

    /// An empty buffer from an earlier reply, if one is kept and this is the pool's loop.
    func take() -> ByteBuffer? {
        guard eventLoop.inEventLoop else { return nil }
        return free.popLast()
    }

    /// Keeps `buffer`, emptied, for a later reply (if there is room and it is not too large).
    func recycle(_ buffer: ByteBuffer) {
        eventLoop.assertInEventLoop()
        guard free.count < Self.maxBuffers, buffer.capacity <= Self.maxKeptCapacity else { return }
        var buffer = buffer
        // Indices only: clearing would copy a buffer that something else still holds.
        buffer.moveReaderIndex(to: 0)
        buffer.moveWriterIndex(to: 0)
        free.append(buffer)
    }

    /// How many buffers are kept (tests).
    var count: Int { free.count }
}
