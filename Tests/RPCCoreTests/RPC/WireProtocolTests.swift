import NIOCore
import NIOPosix
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// The wire protocol at the frame level, with a client that writes frames by hand.
final class WireProtocolTests: XCTestCase {
    var pki: TestPKI!
    var service: EchoTestService!
    var server: RunningServer!
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    override func setUp() async throws {
        pki = try TestPKI.get()
        service = EchoTestService()
        server = try await RunningServer.start(pki: pki, services: [service]) { configuration in
            configuration.limits.maxConcurrentCalls = 4
        }
    }

    override func tearDown() async throws {
        await server?.stop()
        try await group.shutdownGracefully()
    }

    private func connect() throws -> RawRPCConnection {
        try RawRPCConnection(pki: pki, group: group, port: server.port)
    }

    private func replies(_ frames: [YediRPC.Frame]) -> [UInt64: YediRPC.Frame] {
        Dictionary(frames.filter { $0.kind == .end }.map { ($0.callID, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// A normal client still gets answers: one bad connection never takes the server down.
    private func assertServerStillServes(file: StaticString = #filePath, line: UInt = #line) async throws {
        let reply = try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) {
            try await YediEcho.Echo.Client($0).echo(.init(text: "still here"))
        }
        XCTAssertEqual(reply.text, "still here", file: file, line: line)
    }

    func testServerAnnouncesItsLimitsFirst() throws {
        let connection = try connect()
        try connection.send([try RawRPCConnection.request(1, text: "x")])
        XCTAssertTrue(waitForEnds(connection, count: 1))
        let settings = try XCTUnwrap(try connection.closeAndCollect().first)
        XCTAssertEqual(settings.kind, .settings)
        XCTAssertEqual(settings.maxConcurrentCalls, 4)
        XCTAssertEqual(settings.maxFrameBytes, 4 << 20)
        XCTAssertEqual(settings.rememberedMetadataBytes, 2048, "64 entries at 32 bytes each, under 4 KiB")
    }

    /// An entry repeating the previous request's (`same_as_previous`) is that entry for the handler; one
    /// with nothing to repeat is a protocol error that closes only that connection, naming the field.
    func testAnEntrySameAsPreviousIsThePreviousRequestsAndOneWithoutIsRefused() async throws {
        let connection = try connect()
        var first = try RawRPCConnection.request(1, text: "first")
        first.metadata = [.init(key: "authorization", value: "Bearer t"), .init(key: "request-id", value: "r-1")]
        var second = try RawRPCConnection.request(2, text: "second")
        second.metadata = [.init(sameAsPrevious: true), .init(key: "request-id", value: "r-2")]
        var third = try RawRPCConnection.request(3, text: "third")
        third.metadata = [.init(sameAsPrevious: true), .init(sameAsPrevious: true), .init(sameAsPrevious: true)]
        try connection.send([first, second, third])
        let (frames, _) = try connection.framesUntilClosed()
        let goaway = try XCTUnwrap(frames.last)
        XCTAssertEqual(goaway.kind, .goaway)
        XCTAssertEqual(goaway.status?.code, UInt32(StatusCode.invalidArgument.rawValue))
        XCTAssertTrue(goaway.status?.message.contains("metadata.same_as_previous") ?? false, "\(goaway)")
        let seen = try XCTUnwrap(service.probe.context(of: "second")).metadata
        XCTAssertEqual(seen["authorization"], "Bearer t")
        XCTAssertEqual(seen["request-id"], "r-2")
        XCTAssertNil(service.probe.context(of: "third"))
        try await assertServerStillServes()
    }

    func testFramesSplitAcrossManyWritesAreReassembled() throws {
        let connection = try connect()
        var bytes = try RawRPCConnection.frameBytes(try RawRPCConnection.request(1, text: "first"))
        var second = try RawRPCConnection.frameBytes(try RawRPCConnection.request(2, text: "second"))
        bytes.writeBuffer(&second)
        // One byte per TLS record.
        while let byte = bytes.readSlice(length: 1) { try connection.send(byte) }
        XCTAssertTrue(waitForEnds(connection, count: 2))
        let ends = replies(try connection.closeAndCollect())
        XCTAssertEqual(try YediEcho.EchoResponse(serializedBytes: XCTUnwrap(ends[1]).payload).text, "first")
        XCTAssertEqual(try YediEcho.EchoResponse(serializedBytes: XCTUnwrap(ends[2]).payload).text, "second")
    }

    func testFramesCoalescedInOneWriteAreAllAnswered() throws {
        let connection = try connect()
        // Up to the concurrency limit (4) per batch; ten batches in one write.
        var frames: [YediRPC.Frame] = []
        for id in 1...40 { frames.append(try RawRPCConnection.request(UInt64(id), text: "c\(id)")) }
        var coalesced = ByteBuffer()
        for frame in frames { try coalesced.writeFrame(frame) }
        try connection.send(coalesced)
        XCTAssertTrue(waitForEnds(connection, count: 40))
        let ends = replies(try connection.closeAndCollect())
        XCTAssertEqual(ends.count, 40)
        let answered = ends.values.filter { ($0.status?.code ?? 0) == 0 }.count
        let refused = ends.values.filter { $0.status?.code == UInt32(StatusCode.resourceExhausted.rawValue) }.count
        XCTAssertEqual(answered + refused, 40)
        XCTAssertGreaterThanOrEqual(answered, 4)
    }

    func testCallsBeyondTheConcurrencyLimitAreRefused() throws {
        let connection = try connect()
        try connection.send((1...6).map { try RawRPCConnection.request(UInt64($0), text: "hang") })
        XCTAssertTrue(waitForEnds(connection, count: 2))
        let ends = replies(try connection.closeAndCollect())
        XCTAssertEqual(Set(ends.keys), [5, 6])
        XCTAssertEqual(ends[5]?.status?.code, UInt32(StatusCode.resourceExhausted.rawValue))
        XCTAssertTrue(ends[5]?.status?.message.contains("more than 4 concurrent calls") ?? false)
    }

    /// A frame just over the 4 MiB limit: the server refuses it from the length prefix alone, says
    /// GOAWAY with RESOURCE_EXHAUSTED, closes that connection, and keeps serving others.
    func testFrameOverTheLimitClosesOnlyThatConnection() async throws {
        let connection = try connect()
        var prefix = ByteBuffer()
        prefix.writeInteger(UInt32((4 << 20) + 1))
        prefix.writeBytes([0x08, 0x01])
        try connection.send(prefix)
        let (frames, _) = try connection.framesUntilClosed()
        let goaway = try XCTUnwrap(frames.first { $0.kind == .goaway })
        XCTAssertEqual(goaway.status?.code, UInt32(StatusCode.resourceExhausted.rawValue))
        XCTAssertTrue(goaway.status?.message.contains("4194305 bytes exceeds the limit of 4194304") ?? false)
        try await assertServerStillServes()
    }

    func testRandomBytesAfterTheHandshakeCloseOnlyThatConnection() async throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<3 {
            let connection = try connect()
            var garbage = ByteBuffer()
            // A plausible small length, then noise: the frame does not parse.
            garbage.writeInteger(UInt32(200))
            garbage.writeBytes((0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) | 0x80 })
            try connection.send(garbage)
            let (frames, _) = try connection.framesUntilClosed()
            XCTAssertEqual(frames.last?.kind, .goaway)
        }
        try await assertServerStillServes()
    }

    func testCallIDsMustIncrease() throws {
        let connection = try connect()
        try connection.send([try RawRPCConnection.request(5, text: "a"), try RawRPCConnection.request(3, text: "b")])
        let (frames, _) = try connection.framesUntilClosed()
        let goaway = try XCTUnwrap(frames.last)
        XCTAssertEqual(goaway.kind, .goaway)
        XCTAssertTrue(goaway.status?.message.contains("call id 3") ?? false)
    }

    func testPingIsAnsweredWithPong() throws {
        let connection = try connect()
        try connection.send([YediRPC.Frame(kind: .ping, payload: [1, 2, 3, 4, 5, 6, 7, 8])])
        XCTAssertTrue(waitFor(connection) { $0.contains { $0.kind == .pong } })
        let pong = try XCTUnwrap(try connection.closeAndCollect().first { $0.kind == .pong })
        XCTAssertEqual(pong.payload, [1, 2, 3, 4, 5, 6, 7, 8])
    }

    func testGracefulShutdownLetsInFlightCallsFinishAndRefusesNewOnes() async throws {
        let connection = try connect()
        try connection.send([try RawRPCConnection.request(1, text: "sleep:400")])
        let started = await eventually { self.service.probe.startedCalls == ["sleep:400"] }
        XCTAssertTrue(started)
        server.server.beginGracefulShutdown()
        XCTAssertTrue(waitFor(connection) { $0.contains { $0.kind == .goaway } })
        // A request after GOAWAY is refused.
        try connection.send([try RawRPCConnection.request(2, text: "late")])
        let (frames, _) = try connection.framesUntilClosed()
        let goaway = try XCTUnwrap(frames.first { $0.kind == .goaway })
        XCTAssertEqual(goaway.lastCallID, 1)
        let ends = replies(frames)
        XCTAssertEqual(ends[1]?.status, nil, "the in-flight call should finish OK")
        XCTAssertEqual(try YediEcho.EchoResponse(serializedBytes: XCTUnwrap(ends[1]).payload).text, "sleep:400")
        XCTAssertEqual(ends[2]?.status?.code, UInt32(StatusCode.unavailable.rawValue))
        XCTAssertEqual(service.probe.finishedCalls, ["sleep:400"])
        // The listener is closed: new connections are refused, and run() returned.
        _ = await server.task.result
        XCTAssertThrowsError(
            try ClientBootstrap(group: group).connect(host: "127.0.0.1", port: server.port).wait(timeout: .seconds(5))
        )
        server = nil
    }

    /// Cancelling `run()` (a service group giving up on graceful shutdown) ends calls in flight at once.
    func testCancellingTheServerSkipsTheGracePeriod() async throws {
        let connection = try connect()
        try connection.send([try RawRPCConnection.request(1, text: "hang")])
        let started = await eventually { self.service.probe.startedCalls == ["hang"] }
        XCTAssertTrue(started)
        let begin = ContinuousClock.now
        server.task.cancel()
        _ = await server.task.result
        XCTAssertLessThan(ContinuousClock.now - begin, .seconds(5), "the 10 s grace period should not apply")
        let (frames, _) = try connection.framesUntilClosed()
        XCTAssertEqual(replies(frames)[1]?.status?.code, UInt32(StatusCode.unavailable.rawValue))
        let cancelled = await eventually { self.service.probe.cancelledCalls == ["hang"] }
        XCTAssertTrue(cancelled)
        server = nil
    }

    /// Extreme field values from a peer are data, not crashes: a timeout of 2^64-1 microseconds, an
    /// unknown method path, huge window updates for unknown calls, unknown frame kinds.
    func testExtremeFrameValuesAreHandled() throws {
        let connection = try connect()
        var request = try RawRPCConnection.request(1, text: "big timeout")
        request.timeoutMicros = .max
        try connection.send([
            request,
            YediRPC.Frame(callID: 99, kind: .windowUpdate, windowBytes: .max),
            YediRPC.Frame(callID: 98, kind: .cancel),
            YediRPC.Frame(callID: 0, kind: .init(rawValue: 4_242)),
            try RawRPCConnection.request(2, text: "x", method: "not a path"),
            try RawRPCConnection.request(3, text: "x", method: ""),
        ])
        XCTAssertTrue(waitForEnds(connection, count: 3))
        let ends = replies(try connection.closeAndCollect())
        XCTAssertEqual(try YediEcho.EchoResponse(serializedBytes: XCTUnwrap(ends[1]).payload).text, "big timeout")
        XCTAssertEqual(ends[2]?.status?.code, UInt32(StatusCode.unimplemented.rawValue))
        XCTAssertTrue(ends[2]?.status?.message.contains("malformed method path") ?? false)
        XCTAssertEqual(ends[3]?.status?.code, UInt32(StatusCode.unimplemented.rawValue))
    }

    func testIdleConnectionsAreClosedWithGoaway() async throws {
        let idleServer = try await RunningServer.start(pki: pki, services: [service]) { configuration in
            configuration.idleTimeout = .milliseconds(300)
        }
        let connection = try RawRPCConnection(pki: pki, group: group, port: idleServer.port)
        // A call keeps the connection busy; the idle clock starts when it ends.
        try connection.send([try RawRPCConnection.request(1, text: "sleep:400")])
        let (frames, _) = try connection.framesUntilClosed(timeout: .seconds(10))
        XCTAssertEqual(frames.filter { $0.kind == .end }.map(\.callID), [1], "the call in flight must finish first")
        let goaway = try XCTUnwrap(frames.last)
        XCTAssertEqual(goaway.kind, .goaway)
        XCTAssertEqual(goaway.lastCallID, 1)
        XCTAssertTrue(goaway.status?.message.contains("idle") ?? false)
        await idleServer.stop()
    }

    // MARK: Helpers

    private func waitForEnds(_ connection: RawRPCConnection, count: Int) -> Bool {
        connection.waitForEnds(count: count)
    }

    private func waitFor(_ connection: RawRPCConnection, _ condition: ([YediRPC.Frame]) -> Bool) -> Bool {
        connection.waitFor(condition)
    }
}
