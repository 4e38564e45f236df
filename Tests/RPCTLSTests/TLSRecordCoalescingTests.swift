import NIOCore
import NIOEmbedded
import RPCTLS
import RPCTestSupport
import XCTest

/// The handler's buffering contract, observed byte by byte on embedded channels: writes wait for
/// flush and leave as few records and channel writes as possible; reads are delivered once per
/// read-complete; nothing written or received around the handshake is lost.
final class TLSRecordCoalescingTests: XCTestCase {
    private var pki: TestPKI!
    private var pair: EmbeddedTLSPair!

    override func setUpWithError() throws {
        self.pki = try TestPKI.get()
        self.pair = try EmbeddedTLSPair(pki: self.pki)
    }

    override func tearDown() {
        self.pair?.finish()
    }

    func testSmallWritesWaitForFlushThenLeaveAsOneRecordInOneChannelWrite() throws {
        try self.pair.completeHandshake()
        let messages = (0..<100).map { ByteBuffer.pattern(count: 50, seed: UInt32($0)) }
        for message in messages {
            self.pair.client.write(message, promise: nil)
        }
        XCTAssertEqual(try self.pair.outbound(self.pair.client).count, 0, "nothing leaves before flush")

        self.pair.client.flush()
        let ciphertext = try self.pair.outbound(self.pair.client)
        XCTAssertEqual(ciphertext.count, 1, "one channel write per flush")
        XCTAssertEqual(TLSRecords(ciphertext).encryptedCount, 1, "5000 bytes of small writes fit one record")

        try self.pair.deliver(ciphertext, to: self.pair.server)
        let reads = try self.pair.inbound(self.pair.server)
        XCTAssertEqual(reads.count, 1)
        XCTAssertEqual(reads.first, messages.reduce(into: ByteBuffer()) { all, next in all.writeImmutableBuffer(next) })
    }

    func testCoalescingUsesTheFewestRecords() throws {
        try self.pair.completeHandshake()
        // Ten 4000-byte writes: 40,000 bytes need ceil(40000 / 16384) = 3 records.
        for index in 0..<10 {
            self.pair.client.write(ByteBuffer.pattern(count: 4000, seed: UInt32(index)), promise: nil)
        }
        self.pair.client.flush()
        let ciphertext = try self.pair.outbound(self.pair.client)
        XCTAssertEqual(ciphertext.count, 1)
        XCTAssertEqual(TLSRecords(ciphertext).encryptedCount, 3)

        // One 100 KiB write is encrypted in place: ceil(102400 / 16384) = 7 records.
        self.pair.client.writeAndFlush(ByteBuffer.pattern(count: 100 * 1024), promise: nil)
        let large = try self.pair.outbound(self.pair.client)
        XCTAssertEqual(large.count, 1)
        XCTAssertEqual(TLSRecords(large).encryptedCount, 7)

        try self.pair.deliver(ciphertext + large, to: self.pair.server)
        XCTAssertEqual(try self.pair.inbound(self.pair.server).map(\.readableBytes), [40_000 + 100 * 1024])
    }

    func testCiphertextArrivingInPiecesIsDeliveredAsOneReadAtReadComplete() throws {
        try self.pair.completeHandshake()
        var expected = ByteBuffer()
        for index in 0..<3 {
            let message = ByteBuffer.pattern(count: 300 + index, seed: UInt32(index))
            expected.writeImmutableBuffer(message)
            self.pair.client.writeAndFlush(message, promise: nil)
        }
        var ciphertext = ByteBuffer()
        for var buffer in try self.pair.outbound(self.pair.client) { ciphertext.writeBuffer(&buffer) }
        XCTAssertEqual(TLSRecords([ciphertext]).encryptedCount, 3, "three flushes, three records")

        // Seven-byte slices: records split across reads, several records per read-complete.
        var pieces: [ByteBuffer] = []
        while ciphertext.readableBytes > 0 {
            pieces.append(ciphertext.readSlice(length: min(7, ciphertext.readableBytes))!)
        }
        try self.pair.deliver(pieces, to: self.pair.server, readComplete: false)
        XCTAssertEqual(try self.pair.inbound(self.pair.server).count, 0, "nothing is delivered before read-complete")

        try self.pair.deliver([], to: self.pair.server, readComplete: true)
        XCTAssertEqual(try self.pair.inbound(self.pair.server), [expected])
    }

    func testWritesDuringHandshakeFollowTheFinalFlightAndArriveInTheSameRead() throws {
        let early = ByteBuffer(string: "sent before the handshake finished")
        let promise = self.pair.client.eventLoop.makePromise(of: Void.self)
        self.pair.client.writeAndFlush(early, promise: promise)

        let hello = try self.pair.outbound(self.pair.client)
        XCTAssertEqual(TLSRecords(hello).records.map(\.type), [22], "only the ClientHello leaves at first")
        try self.pair.deliver(hello, to: self.pair.server)
        try self.pair.deliver(try self.pair.outbound(self.pair.server), to: self.pair.client)
        XCTAssertNotNil(try self.pair.handler(self.pair.client).handshakeInfo, "TLS 1.3: the client is done")

        // The client's Finished and the early data go out together, and the server gets both in one read.
        let finalFlight = try self.pair.outbound(self.pair.client)
        XCTAssertEqual(finalFlight.count, 1)
        XCTAssertNil(try self.pair.handler(self.pair.server).handshakeInfo)
        try self.pair.deliver(finalFlight, to: self.pair.server)
        XCTAssertNotNil(try self.pair.handler(self.pair.server).handshakeInfo)
        XCTAssertEqual(try self.pair.inbound(self.pair.server), [early])
        XCTAssertNoThrow(try XCTUnwrap(promise.futureResult.completedResult).get())
    }

    func testWritePromisesCompleteInOrderWithTheChannelWrite() throws {
        try self.pair.completeHandshake()
        var completed: [Int] = []
        for index in 0..<3 {
            let promise = self.pair.client.eventLoop.makePromise(of: Void.self)
            promise.futureResult.assumeIsolated().whenSuccess { completed.append(index) }
            self.pair.client.write(ByteBuffer(string: "m\(index)"), promise: promise)
        }
        XCTAssertEqual(completed, [])
        self.pair.client.flush()
        self.pair.client.embeddedEventLoop.run()
        XCTAssertEqual(completed, [0, 1, 2])
    }

    func testCloseSendsCloseNotifyAndWaitsForThePeers() throws {
        try self.pair.completeHandshake()
        let closed = self.pair.client.close()
        XCTAssertTrue(self.pair.client.isActive, "waiting for the peer's close_notify")
        let closeNotify = try self.pair.outbound(self.pair.client)
        XCTAssertEqual(TLSRecords(closeNotify).encryptedCount, 1)

        try self.pair.deliver(closeNotify, to: self.pair.server)
        XCTAssertFalse(self.pair.server.isActive, "the server answered and closed")
        let answer = try self.pair.outbound(self.pair.server)
        XCTAssertEqual(TLSRecords(answer).encryptedCount, 1)

        try self.pair.deliver(answer, to: self.pair.client)
        XCTAssertFalse(self.pair.client.isActive)
        XCTAssertNoThrow(try XCTUnwrap(closed.completedResult).get())
    }

    func testCloseNotifyWaitIsBounded() throws {
        try self.pair.completeHandshake()
        let closed = self.pair.client.close()
        _ = try self.pair.outbound(self.pair.client)
        self.pair.client.embeddedEventLoop.advanceTime(by: .milliseconds(2_999))
        XCTAssertTrue(self.pair.client.isActive)
        self.pair.client.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        XCTAssertFalse(self.pair.client.isActive, "closed after the default 3 s without an answer")
        XCTAssertNoThrow(try XCTUnwrap(closed.completedResult).get())
    }

    func testRaggedEOFIsReportedAsUncleanShutdownAfterDeliveringData() throws {
        try self.pair.completeHandshake()
        self.pair.client.writeAndFlush(ByteBuffer(string: "last words"), promise: nil)
        try self.pair.deliver(try self.pair.outbound(self.pair.client), to: self.pair.server)
        self.pair.server.pipeline.fireChannelInactive()  // TCP gone, no close_notify
        XCTAssertEqual(try self.pair.inbound(self.pair.server), [ByteBuffer(string: "last words")])
        XCTAssertThrowsError(try self.pair.server.throwIfErrorCaught()) { error in
            XCTAssertEqual((error as? TLSError)?.kind, .uncleanShutdown)
        }
    }

    func testDefaultHandshakeTimeoutIsTenSeconds() throws {
        // The server never hears from the client.
        self.pair.server.embeddedEventLoop.advanceTime(by: .milliseconds(9_999))
        XCTAssertTrue(self.pair.server.isActive)
        self.pair.server.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        XCTAssertFalse(self.pair.server.isActive)
        XCTAssertThrowsError(try self.pair.server.throwIfErrorCaught()) { error in
            XCTAssertEqual((error as? TLSError)?.kind, .handshakeTimeout)
        }
    }
}
