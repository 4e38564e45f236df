import Foundation
import NIOCore
import NIOPosix
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// One connection holds at most its memory budget (`WireLimits.maxConnectionBytes`) for the calls it
/// runs: a peer that floods requests whose handlers do not return is refused beyond it, the process's
/// resident memory stays near the budget, and another client's calls keep succeeding.
final class ConnectionMemoryBudgetTests: XCTestCase {
    var pki: TestPKI!
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    override func setUp() async throws {
        pki = try TestPKI.get()
    }

    override func tearDown() async throws {
        try await group.shutdownGracefully()
    }

    func testRequestsHeldByRunningHandlersStayWithinTheBudget() async throws {
        let gate = HandlerGate()
        let service = RawHandlerService { payload, _ in
            let request = try YediEcho.EchoRequest(serializedBytes: payload)
            if request.text == "flood" { await gate.pass() }
            return try YediEcho.EchoResponse(text: request.text).serializedBytes()
        }
        let budget = 16 << 20
        let server = try await RunningServer.start(pki: pki, services: [service]) { configuration in
            configuration.limits.maxConnectionBytes = budget
        }
        let flood = try RawRPCConnection(pki: pki, group: group, port: server.port)
        let payload = [UInt8](repeating: 0xA5, count: 3 << 20)
        let calls = 48
        let before = residentBytes()
        var peak = before
        for id in 1...calls {
            try flood.send([
                YediRPC.Frame(
                    callID: UInt64(2 * id - 1), kind: .request, method: "/yedi.echo.Echo/Echo",
                    payload: try YediEcho.EchoRequest(payload: payload, text: "flood").serializedBytes())
            ])
            peak = max(peak, residentBytes())
        }
        // Every request was either taken (its handler waits at the gate) or refused.
        let settled = await eventually {
            ((try? RawRPCConnection.ends(flood.framesSoFar()).count) ?? 0) + gate.entered == calls
        }
        XCTAssertTrue(settled)
        peak = max(peak, residentBytes())
        let ends = RawRPCConnection.ends(try flood.framesSoFar())
        XCTAssertLessThanOrEqual(gate.entered * (3 << 20), budget, "more requests held than the budget allows")
        XCTAssertGreaterThan(gate.entered, 0)
        for end in ends.values {
            XCTAssertEqual(end.status?.code, UInt32(StatusCode.resourceExhausted.rawValue))
            XCTAssertTrue(end.status?.message.contains("memory budget") ?? false, "\(end.status?.message ?? "")")
        }
        // Measured +47 to +59 MiB with the budget (copies of the taken requests, allocator slack), +305 MiB
        // without it: the bound leaves room for the allocator, not for a missing budget.
        let grown = peak - before
        print("memory budget flood: \(gate.entered) of \(calls) calls taken, resident memory +\(grown >> 20) MiB")
        XCTAssertLessThan(grown, 6 * budget, "resident memory grew by \(grown >> 20) MiB")

        // Another client is served meanwhile.
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let reply = try await YediEcho.Echo.Client(client).echo(.init(text: "other"))
            XCTAssertEqual(reply.text, "other")
        }
        gate.open()
        _ = try flood.closeAndCollect()
        await server.stop()
    }

    // MARK: The budget alone

    func testACallIsAdmittedOnlyWhenItFitsBesideTheCallsAndQueuedReplies() {
        var budget = ConnectionMemoryBudget(limit: 10_000)
        XCTAssertTrue(budget.admitCall(6_000, queuedReplies: 0))
        XCTAssertFalse(budget.admitCall(4_001, queuedReplies: 0))
        XCTAssertFalse(budget.admitCall(1_001, queuedReplies: 3_000))
        XCTAssertTrue(budget.admitCall(1_000, queuedReplies: 3_000))
        budget.callEnded(6_000)
        XCTAssertEqual(budget.heldByCalls, 1_000)
        XCTAssertTrue(budget.admitCall(9_000, queuedReplies: 0))
        XCTAssertFalse(budget.admitCall(1, queuedReplies: 0))
    }

    func testARequestCostsItsPayloadMethodAndMetadataAsTheLimitsCountThem() throws {
        let frame = try InboundFrame.read(
            ByteBuffer(
                bytes: try YediRPC.Frame(
                    callID: 1, kind: .request, method: "/a.B/C",
                    metadata: [YediRPC.MetadataEntry(key: "k", value: "vv")],
                    payload: [UInt8](repeating: 0, count: 100)
                ).serializedBytes()))
        XCTAssertEqual(
            ConnectionMemoryBudget.cost(of: frame),
            ConnectionMemoryBudget.perCallOverhead + 100 + 6 + WireLimits.metadataEntryOverhead + 3)
    }
}
