import NIOCore
import NIOEmbedded
import NIOPosix
import ProtoBridge
import XCTest

@testable import RPCCore

/// Replies are encoded into the buffers of replies already written, and a buffer something still
/// holds is never written over.
final class ReplyBufferPoolTests: XCTestCase {
    private let loop = EmbeddedEventLoop()
    private let message = YediRPC.Status(code: 5, message: "a response of some length")

    private func address(_ buffer: ByteBuffer) -> UInt {
        buffer.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
    }

    private func writeAndRecycle(into pool: ReplyBufferPool) throws -> UInt {
        var first = try ReplyFrame.encode(message, maxPayloadBytes: 1_000)
        let written = try first.finish(callID: 1, kind: .end)
        pool.recycle(written)
        return address(written)
    }

    func testAReplyIsEncodedIntoARecycledBuffer() throws {
        let pool = ReplyBufferPool(eventLoop: loop)
        // Written and let go (as after the flush that handed it to TLS): the pool holds the only copy.
        let storage = try writeAndRecycle(into: pool)
        XCTAssertEqual(pool.count, 1)

        var second = try ReplyFrame.encode(message, maxPayloadBytes: 1_000, reusing: pool.take())
        XCTAssertEqual(pool.count, 0)
        let frame = try second.finish(callID: 2, kind: .end)
        XCTAssertEqual(address(frame), storage, "the recycled buffer was not used")
        let read = try InboundFrame.read(frame.getSlice(at: 4, length: frame.readableBytes - 4)!)
        XCTAssertEqual(read.callID, 2)
        XCTAssertEqual(try YediRPC.Status(buffer: read.payload), message)
    }

    /// TLS (or anything else) still holding a recycled buffer keeps its bytes: the reuse copies.
    func testABufferStillHeldElsewhereIsNotOverwritten() throws {
        let pool = ReplyBufferPool(eventLoop: loop)
        var first = try ReplyFrame.encode(message, maxPayloadBytes: 1_000)
        let stillQueued = try first.finish(callID: 1, kind: .end)
        let before = Array(stillQueued.readableBytesView)
        pool.recycle(stillQueued)

        let other = YediRPC.Status(code: 9, message: "something else entirely, and longer than that")
        var second = try ReplyFrame.encode(other, maxPayloadBytes: 1_000, reusing: pool.take())
        let frame = try second.finish(callID: 2, kind: .end)
        XCTAssertEqual(Array(stillQueued.readableBytesView), before, "a held buffer was written over")
        XCTAssertNotEqual(address(frame), address(stillQueued))
    }

    func testThePoolIsBoundedInCountAndInBufferSize() {
        let pool = ReplyBufferPool(eventLoop: loop)
        let allocator = ByteBufferAllocator()
        pool.recycle(allocator.buffer(capacity: ReplyBufferPool.maxKeptCapacity * 2))
        XCTAssertEqual(pool.count, 0, "a large buffer is let go")
        for _ in 0..<(ReplyBufferPool.maxBuffers + 10) { pool.recycle(allocator.buffer(capacity: 256)) }
        XCTAssertEqual(pool.count, ReplyBufferPool.maxBuffers)
        XCTAssertEqual(pool.take()?.readableBytes, 0, "a recycled buffer comes back empty")
    }

    /// Off its loop the pool gives nothing (the task encodes into a new buffer).
    func testOffItsLoopThePoolGivesNothing() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let pool = ReplyBufferPool(eventLoop: loop)
        try loop.submit { pool.recycle(ByteBufferAllocator().buffer(capacity: 64)) }.wait()
        XCTAssertNil(pool.take())
        let kept = try loop.submit { pool.count }.wait()
        XCTAssertEqual(kept, 1)
    }
}
