import NIOCore
import NIOPosix
import RPCTLS
import RPCTestSupport
import XCTest

/// Connections over real loopback sockets: bulk data, garbage, silence.
final class TLSConnectionLifecycleTests: TLSLoopbackTestCase {
    func testSixteenMebibytesInManyWritesComeBackIdentical() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration())
        )
        defer { server.close() }
        let payload = ByteBuffer.pattern(count: 16 << 20)
        let client = try TestClient.connect(
            group: self.group,
            port: server.port,
            context: TLSContext(configuration: self.pki.clientConfiguration()),
            expecting: payload.readableBytes
        )
        _ = try client.handshake.wait(timeout: .seconds(10), "handshake")

        // Writes of uneven sizes (1 byte to 64 KiB), flushed every few writes, all from the event loop.
        let channel = client.channel
        let written = try channel.eventLoop.submit {
            var remaining = payload
            var sizes: UInt32 = 7
            var writes = 0
            while remaining.readableBytes > 0 {
                sizes = sizes &* 1_103_515_245 &+ 12_345
                let size = min(remaining.readableBytes, 1 + Int(sizes >> 8) % 65_536)
                channel.write(remaining.readSlice(length: size)!, promise: nil)
                writes += 1
                if writes % 5 == 0 { channel.flush() }
            }
            channel.flush()
            return writes
        }.wait(timeout: .seconds(10), "writes")
        XCTAssertGreaterThan(written, 400)

        let echoed = try client.received!.wait(timeout: .seconds(60), "16 MiB echo")
        XCTAssertEqual(echoed.readableBytes, payload.readableBytes)
        XCTAssertTrue(echoed == payload, "echoed bytes differ from what was sent")
        let outcome = try client.close()
        XCTAssertEqual(outcome.errors.count, 0, "\(outcome.errors)")
    }

    func testPlaintextClientIsDroppedAndServerKeepsServing() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration())
        )
        defer { server.close() }

        let raw = try TestClient.connect(group: self.group, port: server.port, context: nil)
        try raw.channel.writeAndFlush(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"))
            .wait(timeout: .seconds(10), "plaintext write")
        _ = try raw.closed.wait(timeout: .seconds(10), "server closes the plaintext connection")
        let refused = try server.connections.outcome(0).wait(timeout: .seconds(10), "server outcome")
        let error = try XCTUnwrap(refused.tlsErrors.first, "\(refused.errors)")
        XCTAssertEqual(error.kind, .handshakeFailed)
        XCTAssertEqual(error.reason, "http request")

        // The listener is unaffected: a real TLS client still gets through.
        let client = try TestClient.connect(
            group: self.group,
            port: server.port,
            context: TLSContext(configuration: self.pki.clientConfiguration()),
            expecting: 5
        )
        _ = try client.handshake.wait(timeout: .seconds(10), "handshake after garbage")
        try client.channel.writeAndFlush(ByteBuffer(string: "still")).wait(timeout: .seconds(10), "write")
        XCTAssertEqual(try client.received!.wait(timeout: .seconds(10), "echo"), ByteBuffer(string: "still"))
        _ = try client.close()
    }

    func testHandshakeTimeoutClosesASilentConnection() throws {
        var configuration = self.pki.serverConfiguration()
        configuration.handshakeTimeout = .milliseconds(200)
        let server = try TLSTestServer.start(group: self.group, context: TLSContext(configuration: configuration))
        defer { server.close() }

        let silent = try TestClient.connect(group: self.group, port: server.port, context: nil)
        _ = try silent.closed.wait(timeout: .seconds(10), "the server gives up on the silent client")
        let outcome = try server.connections.outcome(0).wait(timeout: .seconds(10), "server outcome")
        XCTAssertEqual(outcome.tlsErrors.map(\.kind), [.handshakeTimeout], "\(outcome.errors)")
        XCTAssertEqual(outcome.tlsErrors.first?.reason, "TLS handshake did not complete within 200 ms")
    }

    func testPeerThatDropsTCPWithoutCloseNotifyIsReportedAsUncleanShutdown() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration())
        )
        defer { server.close() }
        let client = try TestClient.connect(
            group: self.group,
            port: server.port,
            context: TLSContext(configuration: self.pki.clientConfiguration()),
            expecting: 3
        )
        _ = try client.handshake.wait(timeout: .seconds(10), "handshake")
        try client.channel.writeAndFlush(ByteBuffer(string: "abc")).wait(timeout: .seconds(10), "write")
        _ = try client.received!.wait(timeout: .seconds(10), "echo")

        // Close the TCP connection underneath TLS: the server gets FIN with no close_notify.
        try client.channel.eventLoop.submit {
            let context = try client.channel.pipeline.syncOperations.context(handlerType: TLSHandler.self)
            context.close(promise: nil)  // from the TLS handler's position: bypasses its close_notify
        }.wait(timeout: .seconds(10), "raw close")
        let outcome = try server.connections.outcome(0).wait(timeout: .seconds(10), "server outcome")
        XCTAssertEqual(outcome.tlsErrors.map(\.kind), [.uncleanShutdown], "\(outcome.errors)")
        XCTAssertEqual(outcome.received, ByteBuffer(string: "abc"), "data before the EOF was delivered")
        _ = try client.closed.wait(timeout: .seconds(10), "client closed")
    }
}
