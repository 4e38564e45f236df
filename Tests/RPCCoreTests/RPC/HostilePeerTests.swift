import NIOCore
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
        XCTAssertTrue(end.status?.message.contains("entries") ?? false, end.status?.message ?? "")
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
}
