import RPCTestSupport
import Synchronization
import XCTest
import YediProto

@testable import RPCCore

/// Many calls at once over one connection.
final class ConcurrencyTests: EchoServerTestCase {
    /// 10,000 calls in flight from one client over one connection (the server runs 256 at a time;
    /// the client queues the rest): every caller gets its own answer.
    func testTenThousandConcurrentUnaryCallsOverOneConnection() async throws {
        let configuration = pki.rpcClientConfiguration(ports: [server.port])
        XCTAssertEqual(configuration.connectionsPerTarget, 1)
        let answered = try await withRPCClient(configuration: configuration) { client in
            let echo = YediEcho.Echo.Client(client)
            return try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<10_000 {
                    group.addTask {
                        let payload = withUnsafeBytes(of: UInt32(index).bigEndian) { Array($0) }
                        let reply = try await echo.echo(.init(payload: payload, text: "#\(index)"))
                        return reply.payload == payload && reply.text == "#\(index)"
                    }
                }
                var correct = 0
                for try await ok in group where ok { correct += 1 }
                return correct
            }
        }
        XCTAssertEqual(answered, 10_000)
        XCTAssertEqual(Set(service.probe.peers.map(\.address)).count, 1, "all calls should share one connection")
    }

    /// Calls finish in the order their handlers finish, not the order they were sent.
    func testResponsesArriveOutOfOrder() async throws {
        let completions = LockedValue<[Int]>([])
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let echo = YediEcho.Echo.Client(client)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        // The first call sent sleeps longest.
                        let reply = try await echo.echo(
                            .init(payload: [UInt8(index)], text: "sleep:\((8 - index) * 60)"))
                        XCTAssertEqual(reply.payload, [UInt8(index)])
                        completions.withLock { $0.append(index) }
                    }
                    try await Task.sleep(for: .milliseconds(5))
                }
                try await group.waitForAll()
            }
        }
        let order = completions.value
        XCTAssertEqual(Set(order), Set(0..<8))
        XCTAssertEqual(order.first, 7, "the shortest call should finish first: \(order)")
        XCTAssertEqual(order.last, 0, "the longest call should finish last: \(order)")
    }
}
