import NIOCore
import NIOEmbedded
import RPCTLS
import RPCTestSupport
import XCTest

/// A TLS client and server on two `EmbeddedChannel`s, with the test carrying the ciphertext between
/// them: every read, write and flush is visible and deterministic.
final class EmbeddedTLSPair {
    let client = EmbeddedChannel()
    let server = EmbeddedChannel()

    init(client clientConfiguration: TLSConfiguration, server serverConfiguration: TLSConfiguration) throws {
        try self.server.pipeline.syncOperations.addHandler(
            TLSHandler(serverContext: TLSContext(configuration: serverConfiguration))
        )
        try self.client.pipeline.syncOperations.addHandler(
            TLSHandler(clientContext: TLSContext(configuration: clientConfiguration), serverName: "localhost")
        )
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 443)
        try self.server.connect(to: address).completedResult!.get()
        try self.client.connect(to: address).completedResult!.get()  // active: the ClientHello is now outbound
    }

    convenience init(pki: TestPKI) throws {
        try self.init(client: pki.clientConfiguration(), server: pki.serverConfiguration())
    }

    func handler(_ channel: EmbeddedChannel) throws -> TLSHandler {
        try channel.pipeline.syncOperations.handler(type: TLSHandler.self)
    }

    /// Every buffer `channel` wrote since last asked, in order.
    func outbound(_ channel: EmbeddedChannel) throws -> [ByteBuffer] {
        var buffers: [ByteBuffer] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            buffers.append(buffer)
        }
        return buffers
    }

    /// Plaintext reads that reached the top of `channel`'s pipeline, one entry per channelRead.
    func inbound(_ channel: EmbeddedChannel) throws -> [ByteBuffer] {
        var buffers: [ByteBuffer] = []
        while let buffer = try channel.readInbound(as: ByteBuffer.self) {
            buffers.append(buffer)
        }
        return buffers
    }

    /// Feeds `buffers` to `channel` as separate channelReads, then (optionally) one channelReadComplete.
    func deliver(_ buffers: [ByteBuffer], to channel: EmbeddedChannel, readComplete: Bool = true) throws {
        for buffer in buffers {
            channel.pipeline.fireChannelRead(buffer)
        }
        if readComplete {
            channel.pipeline.fireChannelReadComplete()
        }
        channel.embeddedEventLoop.run()
        try channel.throwIfErrorCaught()
    }

    /// Moves what each side wrote to the other, each batch as one read, until both are quiet.
    func exchangeUntilQuiet() throws {
        for _ in 0..<20 {
            let fromClient = try self.outbound(self.client)
            let fromServer = try self.outbound(self.server)
            if fromClient.isEmpty && fromServer.isEmpty { return }
            if !fromClient.isEmpty { try self.deliver(fromClient, to: self.server) }
            if !fromServer.isEmpty { try self.deliver(fromServer, to: self.client) }
        }
        XCTFail("the two ends kept talking")
    }

    func completeHandshake() throws {
        try self.exchangeUntilQuiet()
        XCTAssertNotNil(try self.handler(self.client).handshakeInfo)
        XCTAssertNotNil(try self.handler(self.server).handshakeInfo)
    }

    /// Closes both ends. `EmbeddedChannel.finish()` blocks until the close completes, and a TLS close
    /// waits for the peer's close_notify, so let the timers run out first.
    func finish() {
        for channel in [self.client, self.server] {
            channel.close(promise: nil)
            channel.embeddedEventLoop.advanceTime(by: .seconds(60))
            _ = try? channel.finish(acceptAlreadyClosed: true)
        }
    }
}

/// The TLS record layer's view of some ciphertext: content type and length of each record.
struct TLSRecords {
    static let applicationData: UInt8 = 23

    var records: [(type: UInt8, length: Int)] = []

    init(_ buffers: [ByteBuffer]) {
        var all = ByteBuffer()
        for var buffer in buffers { all.writeBuffer(&buffer) }
        while let type = all.readInteger(as: UInt8.self), all.readInteger(as: UInt16.self) != nil,
            let length = all.readInteger(as: UInt16.self), all.readSlice(length: Int(length)) != nil
        {
            self.records.append((type, Int(length)))
        }
        precondition(all.readableBytes == 0, "ciphertext does not end on a record boundary")
    }

    /// TLS 1.3 hides every post-handshake record (data, alerts) behind type 23.
    var encryptedCount: Int { self.records.filter { $0.type == Self.applicationData }.count }
}

extension EventLoopFuture {
    /// The outcome, if the future already completed. Embedded loops complete futures synchronously, so
    /// this replaces `wait()`, which would block forever on one that never completes.
    var completedResult: Result<Value, any Error>? {
        var result: Result<Value, any Error>?
        self.assumeIsolated().whenComplete { result = $0 }
        return result
    }
}
