import NIOCore
import NIOPosix
import ProtoBridge
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// A TLS connection that speaks frames by hand, for tests of the wire protocol itself.
final class RawRPCConnection {
    let client: TestClient
    private var buffered = ByteBuffer()
    private var readOffset = 0

    init(pki: TestPKI, group: any EventLoopGroup, port: Int) throws {
        let context = try TLSContext(configuration: pki.clientConfiguration(identity: "yedi-probe"))
        client = try TestClient.connect(group: group, port: port, context: context)
        _ = try client.handshake.wait(timeout: .seconds(10), "handshake")
    }

    static func frameBytes(_ frame: YediRPC.Frame) throws -> ByteBuffer {
        var buffer = ByteBuffer()
        try buffer.writeFrame(frame)
        return buffer
    }

    static func request(_ id: UInt64, text: String, method: String = "/yedi.echo.Echo/Echo") throws -> YediRPC.Frame {
        YediRPC.Frame(
            callID: id,
            kind: .request,
            method: method,
            payload: try YediEcho.EchoRequest(text: text).serializedBytes()
        )
    }

    func send(_ bytes: ByteBuffer) throws {
        try client.channel.writeAndFlush(bytes).wait(timeout: .seconds(10), "write")
    }

    func send(_ frames: [YediRPC.Frame]) throws {
        var buffer = ByteBuffer()
        for frame in frames { try buffer.writeFrame(frame) }
        try send(buffer)
    }

    /// Waits for the connection to close and returns every frame the server sent.
    func framesUntilClosed(timeout: TimeAmount = .seconds(10)) throws -> (frames: [YediRPC.Frame], errors: [any Error])
    {
        let outcome = try client.closed.wait(timeout: timeout, "server closes the connection")
        return (try Self.parse(outcome.received), outcome.errors)
    }

    /// Closes our side and returns every frame the server sent before.
    func closeAndCollect() throws -> [YediRPC.Frame] {
        try Self.parse(try client.close().received)
    }

    static func parse(_ received: ByteBuffer) throws -> [YediRPC.Frame] {
        var buffer = received
        var frames: [YediRPC.Frame] = []
        while let length = buffer.readInteger(as: UInt32.self) {
            guard let body = buffer.readSlice(length: Int(length)) else { break }
            frames.append(try YediRPC.Frame(buffer: body))
        }
        return frames
    }
}
