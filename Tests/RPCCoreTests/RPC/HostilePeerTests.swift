import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// Peers that try to make the server hold or send more than its limits allow, with frames written by
/// hand: each is refused by count or by size, and the server keeps serving.
final class HostilePeerTests: XCTestCase {
    var pki: TestPKI!
    var service: EchoTestService!
    var server: RunningServer!
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    override func setUp() async throws {
        pki = try TestPKI.get()
        service = EchoTestService()
        server = try await RunningServer.start(pki: pki, services: [service])
    }

    override func tearDown() async throws {
        await server?.stop()
        try await group.shutdownGracefully()
    }

    private func connect() throws -> RawRPCConnection {
        try RawRPCConnection(pki: pki, group: group, port: server.port)
    }

    private static let resourceExhausted = UInt32(StatusCode.resourceExhausted.rawValue)

    // MARK: Metadata

    /// Empty entries weigh nothing by their bytes; they are refused by count before a handler starts.
    func testManyEmptyMetadataEntriesAreRefusedBeforeTheCallStarts() throws {
        let connection = try connect()
        var request = try RawRPCConnection.request(1, text: "many entries")
        request.metadata = Array(repeating: YediRPC.MetadataEntry(key: "", value: ""), count: 100_000)
        try connection.send([request])
        XCTAssertTrue(connection.waitForEnds(count: 1))
        let end = try XCTUnwrap(RawRPCConnection.ends(try connection.closeAndCollect())[1])
        XCTAssertEqual(end.status?.code, Self.resourceExhausted)
        // The whole count, though the server kept only the first entries past the limit.
        XCTAssertTrue(end.status?.message.contains("has 100000 entries") ?? false, end.status?.message ?? "")
        XCTAssertEqual(service.probe.startedCalls, [])
    }

    /// Each entry costs its overhead besides its key and value: 60 entries of 251 bytes (15,060 bytes
    /// of text) exceed 16 KiB once each counts its 32 bytes.
    func testEachMetadataEntryCountsItsOverhead() throws {
        let connection = try connect()
        var request = try RawRPCConnection.request(1, text: "overhead")
        let value = String(repeating: "v", count: 250)
        request.metadata = (0..<60).map { _ in YediRPC.MetadataEntry(key: "k", value: value) }
        var fits = try RawRPCConnection.request(2, text: "fits")
        fits.metadata = (0..<8).map { _ in YediRPC.MetadataEntry(key: "k", value: value) }
        try connection.send([request, fits])
        XCTAssertTrue(connection.waitForEnds(count: 2))
        let ends = RawRPCConnection.ends(try connection.closeAndCollect())
        XCTAssertEqual(ends[1]?.status?.code, Self.resourceExhausted)
        XCTAssertTrue(ends[1]?.status?.message.contains("16384 bytes") ?? false, ends[1]?.status?.message ?? "")
        XCTAssertNil(ends[2]?.status)
        XCTAssertEqual(service.probe.startedCalls, ["fits"])
    }

    // MARK: Echoed input

    /// A refusal names what it refuses, but never sends back more than a line of it.
    func testRefusingAHugeMethodNameDoesNotEchoIt() throws {
        let connection = try connect()
        let method = "/yedi.echo.Echo/" + String(repeating: "x", count: 1 << 20)
        try connection.send([try RawRPCConnection.request(1, text: "x", method: method)])
        XCTAssertTrue(connection.waitForEnds(count: 1))
        let end = try XCTUnwrap(RawRPCConnection.ends(try connection.closeAndCollect())[1])
        XCTAssertEqual(end.status?.code, UInt32(StatusCode.unimplemented.rawValue))
        let message = end.status?.message ?? ""
        XCTAssertLessThanOrEqual(message.utf8.count, 512, "the refusal echoed \(message.utf8.count) bytes")
        XCTAssertTrue(message.contains("Echo"), message)
    }

    /// A keepalive needs 8 bytes; a PONG never carries back more than 64 of a PING's payload.
    func testPongEchoesABoundedPartOfThePing() throws {
        let connection = try connect()
        let payload = (0..<4_096).map { UInt8(truncatingIfNeeded: $0) }
        try connection.send([YediRPC.Frame(kind: .ping, payload: payload)])
        XCTAssertTrue(connection.waitFor { $0.contains { $0.kind == .pong } })
        let pong = try XCTUnwrap(try connection.closeAndCollect().first { $0.kind == .pong })
        XCTAssertEqual(pong.payload, Array(payload.prefix(64)))
    }

    // MARK: Outbound back-pressure

    /// While the connection cannot send (the peer does not read), the server asks for no more input;
    /// it asks again once the connection can send. Counted at the bottom of the pipeline, where the
    /// socket would be read.
    func testServerStopsReadingWhileTheConnectionIsNotWritable() throws {
        let channel = EmbeddedChannel()
        let reads = ReadCounter()
        let configuration = ServerConnectionHandler.Configuration(
            limits: .default,
            idleTimeout: .seconds(30),
            defaultStreamWindowBytes: 1024,
            router: RPCRouter(),
            interceptors: [],
            executor: EventLoopExecutor(channel.embeddedEventLoop),
            replyBuffers: ReplyBufferPool(eventLoop: channel.embeddedEventLoop),
            logger: Logger(label: "test.server")
        )
        try channel.pipeline.syncOperations.addHandlers(
            reads,
            ByteToMessageHandler(FrameDecoder(maxFrameBytes: 1 << 20)),
            ServerConnectionHandler(configuration: configuration, registry: ConnectionRegistry())
        )
        channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 443), promise: nil)
        channel.read()
        XCTAssertEqual(reads.count, 1)

        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.read()
        channel.read()
        XCTAssertEqual(reads.count, 1, "the server read on while it could not send")

        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        XCTAssertEqual(reads.count, 2, "the read held back is issued once the connection can send")
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    // MARK: Running handlers

    /// REQUEST and CANCEL pairs: a cancelled call whose handler is still running keeps its slot, so no
    /// more than the limit of handlers ever run on one connection.
    func testCancelledCallsKeepTheirSlotUntilTheirHandlerReturns() async throws {
        let gate = HandlerGate()
        let gated = try await startGatedServer(gate)
        let connection = try RawRPCConnection(pki: pki, group: group, port: gated.port)
        var frames: [YediRPC.Frame] = []
        for id in UInt64(1)...4 {
            frames.append(try RawRPCConnection.request(id, text: "held"))
            frames.append(YediRPC.Frame(callID: id, kind: .cancel))
        }
        for id in UInt64(5)...8 { frames.append(try RawRPCConnection.request(id, text: "more")) }
        try connection.send(frames)
        XCTAssertTrue(connection.waitForEnds(count: 4))
        XCTAssertEqual(gate.entered, 4, "only the limit of handlers may run")
        gate.open()
        // Once the handlers returned, their slots are free again: a later call is served.
        var served = false
        for id in UInt64(9)...200 where !served {
            try connection.send([try RawRPCConnection.request(id, text: "after")])
            XCTAssertTrue(connection.waitFor { RawRPCConnection.ends($0)[id] != nil })
            served = RawRPCConnection.ends(try connection.framesSoFar())[id]?.status == nil
        }
        XCTAssertTrue(served)
        let ends = RawRPCConnection.ends(try connection.closeAndCollect())
        for id in UInt64(5)...8 { XCTAssertEqual(ends[id]?.status?.code, Self.resourceExhausted, "call \(id)") }
        await gated.stop()
    }

    /// Expired calls too: a 1 µs deadline ends the call at once, but its handler still holds a slot
    /// (and its END, DEADLINE_EXCEEDED, waits for the handler, so the client frees the slot then too).
    func testExpiredCallsKeepTheirSlotUntilTheirHandlerReturns() async throws {
        let gate = HandlerGate()
        let gated = try await startGatedServer(gate)
        let connection = try RawRPCConnection(pki: pki, group: group, port: gated.port)
        try connection.send(
            try (UInt64(1)...4).map { id in
                var request = try RawRPCConnection.request(id, text: "held")
                request.timeoutMicros = 1
                return request
            }
        )
        let entered = await eventually { gate.entered == 4 }
        XCTAssertTrue(entered)
        try connection.send(try (UInt64(5)...8).map { try RawRPCConnection.request($0, text: "more") })
        XCTAssertTrue(connection.waitForEnds(count: 4))
        XCTAssertEqual(RawRPCConnection.ends(try connection.framesSoFar()).keys.sorted(), [5, 6, 7, 8])
        XCTAssertEqual(gate.entered, 4, "only the limit of handlers may run")
        gate.open()
        XCTAssertTrue(connection.waitForEnds(count: 8))
        let ends = RawRPCConnection.ends(try connection.closeAndCollect())
        for id in UInt64(1)...4 {
            XCTAssertEqual(ends[id]?.status?.code, UInt32(StatusCode.deadlineExceeded.rawValue), "call \(id)")
        }
        for id in UInt64(5)...8 { XCTAssertEqual(ends[id]?.status?.code, Self.resourceExhausted, "call \(id)") }
        await gated.stop()
    }

    private func startGatedServer(_ gate: HandlerGate) async throws -> RunningServer {
        let service = RawHandlerService { payload, _ in
            await gate.pass()
            return try YediEcho.EchoResponse(payload: [], text: "done").serializedBytes()
        }
        return try await RunningServer.start(pki: pki, services: [service]) { configuration in
            configuration.limits.maxConcurrentCalls = 4
        }
    }
}

/// Counts the reads that reach the bottom of the pipeline.
private final class ReadCounter: ChannelOutboundHandler {
    typealias OutboundIn = Any

    private(set) var count = 0

    func read(context: ChannelHandlerContext) {
        count += 1
        context.read()
    }
}
