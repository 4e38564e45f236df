import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// A stream the server never saw (queued behind the concurrency limit when the server said GOAWAY) is
/// sent again on another connection, as a unary call would be: its caller just reads its messages.
final class StreamRetryTests: XCTestCase {
    var pki: TestPKI!

    override func setUp() async throws {
        pki = try TestPKI.get()
    }

    func testAStreamTheServerNeverSawIsRetriedOnAnotherServer() async throws {
        let first = EchoTestService()
        let serverA = try await RunningServer.start(pki: pki, services: [first]) { configuration in
            configuration.limits.maxConcurrentCalls = 1
            configuration.shutdownGracePeriod = .seconds(10)
        }
        // B's port is free while the client starts: its calls go to A until B is up.
        let probeB = try await RunningServer.start(pki: pki, services: [EchoTestService()])
        let portB = probeB.port
        await probeB.stop()

        let configuration = pki.rpcClientConfiguration(ports: [serverA.port, portB])
        try await withRPCClient(configuration: configuration) { client in
            let echo = YediEcho.Echo.Client(client)
            _ = try await client.waitUntilReady(timeout: .seconds(5))
            let slow = Task { try await echo.echo(.init(text: "sleep:800")) }
            let started = await eventually { first.probe.startedCalls == ["sleep:800"] }
            XCTAssertTrue(started)
            // Queued on A's connection behind the slow call (A allows one call at a time).
            let stream = Task {
                try await echo.expand(.init(count: 3, text: "streamed"), options: .init(timeout: .seconds(10))) {
                    responses in
                    var texts: [String] = []
                    for try await response in responses { texts.append(response.text) }
                    return texts
                }
            }
            try await Task.sleep(for: .milliseconds(100))
            let serverB = try await RunningServer.start(pki: self.pki, services: [EchoTestService()], port: portB)
            let bothReady = await eventually { client.readyConnectionCount == 2 }
            XCTAssertTrue(bothReady)
            serverA.server.beginGracefulShutdown()
            let texts = try await stream.value
            XCTAssertEqual(texts, ["streamed", "streamed", "streamed"])
            XCTAssertFalse(first.probe.startedCalls.contains("streamed"), "A never saw the stream")
            _ = try await slow.value
            await serverB.stop()
        }
        _ = await serverA.task.result
    }
}

extension RPCClient {
    /// Connections ready for calls (for tests).
    var readyConnectionCount: Int { pool.connections.filter { $0.readyHandler != nil }.count }
}
