import RPCTLS
import RPCTestSupport
import Synchronization
import XCTest
import YediProto

@testable import RPCCore

/// A client of several replicas watches each one's health on its connection: a replica that says
/// NOT_SERVING gets no new calls while another is ready (before any call failed there), gets them again
/// once it says SERVING, and is still called when every replica says NOT_SERVING. The watches never hold
/// a shutdown: the server ends them as it drains (as every open stream), the client cancels its own.
final class ServerHealthWatchTests: XCTestCase {
    func testAReplicaThatSaysNotServingGetsNoNewCallsUntilItServesAgain() async throws {
        let pki = try TestPKI.get()
        let troubled = EchoTestService()
        let other = EchoTestService()
        let troubledServer = try await RunningServer.start(pki: pki, services: [troubled])
        let otherServer = try await RunningServer.start(pki: pki, services: [other])
        let ports = [troubledServer.port, otherServer.port]
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: ports)) { client in
            let echo = YediEcho.Echo.Client(client)
            let ready = await eventually { client.readyConnectionCount == 2 }
            XCTAssertTrue(ready)

            troubledServer.server.health.setStatus(.notServing, for: "")
            let heard = await eventually { client.connectionsWhoseServerSaysNotServing == 1 }
            XCTAssertTrue(heard, "the client heard NOT_SERVING without making a call")
            for index in 0..<20 { _ = try await echo.echo(.init(text: "down \(index)")) }
            XCTAssertEqual(troubled.probe.startedCalls.count, 0, "\(troubled.probe.startedCalls)")
            XCTAssertEqual(other.probe.startedCalls.count, 20)

            troubledServer.server.health.setStatus(.serving, for: "")
            let back = await eventually { client.connectionsWhoseServerSaysNotServing == 0 }
            XCTAssertTrue(back)
            for index in 0..<20 { _ = try await echo.echo(.init(text: "up \(index)")) }
            XCTAssertEqual(
                troubled.probe.startedCalls.filter { $0.hasPrefix("up") }.count, 10,
                "back in the round robin: every second call")

            // Every replica NOT_SERVING: health chooses between replicas, it never refuses a call.
            troubledServer.server.health.setStatus(.notServing, for: "")
            otherServer.server.health.setStatus(.notServing, for: "")
            let both = await eventually { client.connectionsWhoseServerSaysNotServing == 2 }
            XCTAssertTrue(both)
            for index in 0..<4 { _ = try await echo.echo(.init(text: "all down \(index)")) }
        }
        // Without the watch, the same NOT_SERVING replica gets every second call.
        let unwatched = pki.rpcClientConfiguration(ports: ports) { $0.watchesHealth = false }
        try await withRPCClient(configuration: unwatched) { client in
            let echo = YediEcho.Echo.Client(client)
            let ready = await eventually { client.readyConnectionCount == 2 }
            XCTAssertTrue(ready)
            troubledServer.server.health.setStatus(.notServing, for: "")
            for index in 0..<20 { _ = try await echo.echo(.init(text: "unwatched \(index)")) }
            XCTAssertEqual(client.connectionsWhoseServerSaysNotServing, 0)
        }
        XCTAssertEqual(troubled.probe.startedCalls.filter { $0.hasPrefix("unwatched") }.count, 10)
        await troubledServer.stop()
        await otherServer.stop()
    }

    /// A watch the server refused while the connection stays up is made again: the client still hears a
    /// later NOT_SERVING.
    func testAWatchTheServerRefusedIsMadeAgain() async throws {
        let pki = try TestPKI.get()
        let refuseFirstWatch = RefuseFirstWatch()
        let troubledServer = try await RunningServer.start(
            pki: pki, services: [EchoTestService()], interceptors: [refuseFirstWatch])
        let otherServer = try await RunningServer.start(pki: pki, services: [EchoTestService()])
        let configuration = pki.rpcClientConfiguration(ports: [troubledServer.port, otherServer.port]) {
            $0.healthWatchRetryDelay = .milliseconds(100)
        }
        try await withRPCClient(configuration: configuration) { client in
            let refused = await eventually { refuseFirstWatch.refused.withLock { $0 } }
            XCTAssertTrue(refused, "the first watch was refused")
            let watchedAgain = await eventually { troubledServer.server.health.watcherCount == 1 }
            XCTAssertTrue(watchedAgain, "the watch was made again on the same connection")
            troubledServer.server.health.setStatus(.notServing, for: "")
            let heard = await eventually { client.connectionsWhoseServerSaysNotServing == 1 }
            XCTAssertTrue(heard)
        }
        await troubledServer.stop()
        await otherServer.stop()
    }

    /// A server that runs one call at a time per connection is not watched: the watch would take its slot.
    func testAServerWithFewCallSlotsIsNotWatched() async throws {
        let pki = try TestPKI.get()
        let servers = [
            try await RunningServer.start(pki: pki, services: [EchoTestService()]) { $0.limits.maxConcurrentCalls = 1 },
            try await RunningServer.start(pki: pki, services: [EchoTestService()]),
        ]
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: servers.map(\.port))) { client in
            let echo = YediEcho.Echo.Client(client)
            let watched = await eventually { servers[1].server.health.watcherCount == 1 }
            XCTAssertTrue(watched)
            XCTAssertEqual(servers[0].server.health.watcherCount, 0)
            for index in 0..<4 { _ = try await echo.echo(.init(text: "\(index)")) }
        }
        for server in servers { await server.stop() }
    }

    /// A server draining with watched connections (it ends every open stream), and a client shutting down
    /// with its watches open (it cancels them first), each finish long before the server's 30 s grace.
    func testWatchesHoldNeitherTheServersNorTheClientsShutdown() async throws {
        let pki = try TestPKI.get()
        let servers = [
            try await RunningServer.start(pki: pki, services: [EchoTestService()]) {
                $0.shutdownGracePeriod = .seconds(30)
            },
            try await RunningServer.start(pki: pki, services: [EchoTestService()]) {
                $0.shutdownGracePeriod = .seconds(30)
            },
        ]
        let configuration = pki.rpcClientConfiguration(ports: servers.map(\.port))
        let clientStopped = Atomic<Bool>(false)
        let clientTask = Task {
            try await withRPCClient(configuration: configuration) { client in
                let ready = await eventually { client.readyConnectionCount == 2 }
                XCTAssertTrue(ready)
                let watched = await eventually { servers.allSatisfy { $0.server.health.watcherCount == 1 } }
                XCTAssertTrue(watched, "the client watches each replica")

                let start = ContinuousClock.now
                await servers[0].stop()
                XCTAssertLessThan(ContinuousClock.now - start, .seconds(10), "the drain did not wait for the watch")
                let heard = await eventually { client.readyConnectionCount == 1 }
                XCTAssertTrue(heard)
            }
            clientStopped.store(true, ordering: .relaxed)
        }
        let stopped = await eventually(timeout: .seconds(20)) { clientStopped.load(ordering: .relaxed) }
        XCTAssertTrue(stopped, "the client's shutdown did not wait for its watch")
        // A client stuck in its shutdown is left behind rather than awaited (the test would hang).
        if stopped { try await clientTask.value }
        let start = ContinuousClock.now
        await servers[1].stop()
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(10))
    }
}

/// Refuses the first `Health/Watch` call it sees, as a server under load might.
private final class RefuseFirstWatch: ServerInterceptor {
    let refused = Mutex(false)

    func intercept(
        context: ServerContext, next: @Sendable (ServerContext) async throws -> ServerResponse
    ) async throws -> ServerResponse {
        if context.method.method == "Watch", !refused.withLock({ $0 }) {
            refused.withLock { $0 = true }
            throw RPCError(code: .resourceExhausted, message: "busy")
        }
        return try await next(context)
    }
}
