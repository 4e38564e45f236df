import NIOCore
import NIOPosix
import ProtoBridge
import RPCTLS
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

    /// Waits until `count` END frames arrived (without closing the connection).
    func waitForEnds(count: Int) -> Bool {
        waitFor { frames in frames.filter { $0.kind == .end }.count >= count }
    }

    /// Polls what the connection received so far (without closing it) until `condition` holds.
    func waitFor(_ condition: ([YediRPC.Frame]) -> Bool) -> Bool {
        let deadline = NIODeadline.now() + .seconds(10)
        while NIODeadline.now() < deadline {
            if let frames = try? framesSoFar(), condition(frames) { return true }
            usleep(5_000)
        }
        return false
    }

    /// Every frame received until now (without closing the connection).
    func framesSoFar() throws -> [YediRPC.Frame] {
        let channel = client.channel
        let received = try channel.eventLoop.submit {
            try channel.pipeline.syncOperations.handler(type: RecordingHandler.self).receivedSoFar
        }.wait()
        return try Self.parse(received)
    }

    /// The END frames received so far, by call id.
    static func ends(_ frames: [YediRPC.Frame]) -> [UInt64: YediRPC.Frame] {
        Dictionary(frames.filter { $0.kind == .end }.map { ($0.callID, $0) }, uniquingKeysWith: { first, _ in first })
    }
}
