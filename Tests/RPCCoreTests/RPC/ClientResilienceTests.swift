import Logging
import NIOCore
import NIOPosix
import RPCTLS
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// The client's pool, retries, retry budget, reconnection and keepalive.
final class ClientResilienceTests: XCTestCase {
    var pki: TestPKI!

    override func setUp() async throws {
        pki = try TestPKI.get()
    }

    /// A server that keeps failing with UNAVAILABLE: the retry budget stops retries once half the
    /// tokens are gone, so 30 failing calls make 33 attempts instead of 90.
    func testRetryBudgetStopsARetryStorm() async throws {
        let service = EchoTestService()
        let server = try await RunningServer.start(pki: pki, services: [service])
        let configuration = pki.rpcClientConfiguration(ports: [server.port]) { configuration in
            configuration.maxAttempts = 3
            configuration.retryBackoff = Backoff(initial: .milliseconds(1), maximum: .milliseconds(2))
            configuration.retryThrottle = RetryThrottle(maxTokens: 10, tokenRatio: 0.1)
        }
        try await withRPCClient(configuration: configuration) { client in
            let echo = YediEcho.Echo.Client(client)
            for _ in 0..<30 {
                do {
                    _ = try await echo.echo(.init(text: "fail:14:overloaded"))
                    XCTFail("expected UNAVAILABLE")
                } catch let error as RPCError {
                    XCTAssertEqual(error.code, .unavailable)
                    XCTAssertEqual(error.message, "overloaded")
                }
            }
        }
        // Call 1: 3 attempts (10 → 7 tokens); call 2: 2 attempts (→ 5, no more retries); then 1 each.
        XCTAssertEqual(service.probe.startedCalls.count, 33)
        await server.stop()
    }

    /// A server name OpenSSL refuses fails the connection with a TLS error instead of trapping on the
    /// connection handler's unfulfilled promise.
    func testInvalidServerNameFailsTheConnection() async throws {
        let server = try await RunningServer.start(pki: pki, services: [EchoTestService()])
        let configuration = pki.rpcClientConfiguration(ports: [server.port]) { $0.serverName = "" }
        try await withRPCClient(configuration: configuration) { client in
            do {
                try await client.waitUntilReady(timeout: .seconds(10))
                XCTFail("expected the connection to fail")
            } catch let error as RPCConnectionError {
                XCTAssertEqual(error.kind, .tls, error.message)
            }
        }
        await server.stop()
    }

    func testWithoutTheBudgetEveryIdempotentCallIsRetried() async throws {
        let service = EchoTestService()
        let server = try await RunningServer.start(pki: pki, services: [service])
        let configuration = pki.rpcClientConfiguration(ports: [server.port]) { configuration in
            configuration.maxAttempts = 3
            configuration.retryBackoff = Backoff(initial: .milliseconds(1), maximum: .milliseconds(2))
            configuration.retryThrottle = RetryThrottle(maxTokens: 1_000, tokenRatio: 1)
        }
        try await withRPCClient(configuration: configuration) { client in
            let echo = YediEcho.Echo.Client(client)
            for _ in 0..<10 {
                _ = try? await echo.echo(.init(text: "fail:14:overloaded"))
            }
            // Non-idempotent by option: never retried.
            _ = try? await echo.echo(.init(text: "fail:14:once"), options: .init(retry: false))
            // Other codes are not retried.
            _ = try? await echo.echo(.init(text: "fail:13:internal"))
        }
        XCTAssertEqual(service.probe.startedCalls.filter { $0 == "fail:14:overloaded" }.count, 30)
        XCTAssertEqual(service.probe.startedCalls.filter { $0 == "fail:14:once" }.count, 1)
        XCTAssertEqual(service.probe.startedCalls.filter { $0 == "fail:13:internal" }.count, 1)
        await server.stop()
    }

    /// Calls are spread round robin over the connections to every target.
    func testRoundRobinOverSeveralAddresses() async throws {
        let first = EchoTestService()
        let second = EchoTestService()
        let server1 = try await RunningServer.start(pki: pki, services: [first])
        let server2 = try await RunningServer.start(pki: pki, services: [second])
        let configuration = pki.rpcClientConfiguration(ports: [server1.port, server2.port])
        try await withRPCClient(configuration: configuration) { client in
            let echo = YediEcho.Echo.Client(client)
            // Let both connections come up before counting.
            let ready = await eventually { client.readyConnectionCount == 2 }
            XCTAssertTrue(ready)
            for index in 0..<20 { _ = try await echo.echo(.init(text: "\(index)")) }
        }
        XCTAssertEqual(first.probe.startedCalls.count + second.probe.startedCalls.count, 20)
        XCTAssertEqual(first.probe.startedCalls.count, 10)
        XCTAssertEqual(second.probe.startedCalls.count, 10)
        await server1.stop()
        await server2.stop()
    }

    /// The server goes away and comes back on the same port: calls fail fast with UNAVAILABLE while
    /// it is gone, and succeed again once the client has reconnected.
    func testReconnectsAfterTheServerRestarts() async throws {
        let service = EchoTestService()
        var server = try await RunningServer.start(pki: pki, services: [service])
        let port = server.port
        let configuration = pki.rpcClientConfiguration(ports: [port]) { configuration in
            configuration.reconnectBackoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(100))
        }
        try await withRPCClient(configuration: configuration) { client in
            let echo = YediEcho.Echo.Client(client)
            let before = try await echo.echo(.init(text: "before"))
            XCTAssertEqual(before.text, "before")
            await server.stop()
            let failedFast = await eventually {
                client.connectionStates.allSatisfy { if case .transientFailure = $0 { true } else { false } }
            }
            XCTAssertTrue(failedFast)
            do {
                _ = try await echo.echo(.init(text: "while down"), options: .init(timeout: .seconds(5)))
                XCTFail("expected UNAVAILABLE while the server is down")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .unavailable)
                XCTAssertTrue(error.message.contains("cannot connect"), error.message)
            }
            server = try await RunningServer.start(pki: pki, services: [service], port: port)
            let reconnected = await eventually { client.readyConnectionCount == 1 }
            XCTAssertTrue(reconnected)
            let after = try await echo.echo(.init(text: "after"))
            XCTAssertEqual(after.text, "after")
        }
        await server.stop()
    }

    /// A restarted server is found within `refusedReconnectBackoff` (here at most 100 ms), not after the
    /// long waits of `reconnectBackoff` (here 10 s and more): the attempts while it was down were refused
    /// at once, which costs the host nothing.
    func testRefusedAttemptsBackOffBrieflySoARestartedServerIsFoundSoon() async throws {
        let service = EchoTestService()
        var server = try await RunningServer.start(pki: pki, services: [service])
        let port = server.port
        let configuration = pki.rpcClientConfiguration(ports: [port]) { configuration in
            configuration.reconnectBackoff = Backoff(initial: .seconds(10), maximum: .seconds(20))
            configuration.refusedReconnectBackoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(100))
        }
        try await withRPCClient(configuration: configuration) { client in
            let echo = YediEcho.Echo.Client(client)
            _ = try await echo.echo(.init(text: "before"))
            // A connection that lived a second is not a failure: its close reconnects at once.
            try await Task.sleep(for: .milliseconds(1_100))
            await server.stop()
            let refused = await eventually {
                client.connectionStates.contains {
                    if case .transientFailure(_, let cause) = $0 { ClientConnection.isRefusal(cause) } else { false }
                }
            }
            XCTAssertTrue(refused, "\(client.connectionStates)")
            try await Task.sleep(for: .milliseconds(300))  // several refused attempts
            server = try await RunningServer.start(pki: pki, services: [service], port: port)
            let reconnected = await eventually(timeout: .seconds(5)) { client.readyConnectionCount == 1 }
            XCTAssertTrue(reconnected, "not reconnected within 5 s: the refused attempts backed off like others")
        }
        await server.stop()
    }

    /// A refused connect counts as a refusal; a timeout or another failure does not. (NIO's
    /// `NIOConnectionError`, a refusal only when every address tried refused, cannot be built in a test:
    /// the end-to-end test above goes through it with one address.)
    func testARefusalIsTellingFromOtherConnectionFailures() {
        XCTAssertTrue(ClientConnection.isRefusal(IOError(errnoCode: ECONNREFUSED, reason: "connect")))
        XCTAssertFalse(ClientConnection.isRefusal(IOError(errnoCode: ETIMEDOUT, reason: "connect")))
        XCTAssertFalse(ClientConnection.isRefusal(ChannelError.connectTimeout(.seconds(1))))
        XCTAssertFalse(ClientConnection.isRefusal(RPCError(code: .unavailable, message: "refused")))
    }

    /// A server that completes the handshake and then never answers: keepalive pings go unanswered,
    /// so the client closes the connection and the call fails instead of hanging forever.
    func testKeepaliveDetectsADeadPeer() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let silent = try SilentServer.start(pki: pki, group: group)
        let configuration = pki.rpcClientConfiguration(ports: [silent.port]) { configuration in
            configuration.keepaliveInterval = .milliseconds(100)
            configuration.keepaliveTimeout = .milliseconds(200)
        }
        let started = ContinuousClock.now
        try await withRPCClient(configuration: configuration) { client in
            do {
                _ = try await YediEcho.Echo.Client(client).echo(.init(text: "anyone?"), options: .init(retry: false))
                XCTFail("expected UNAVAILABLE")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .unavailable)
                XCTAssertTrue(error.message.contains("keepalive"), error.message)
            }
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5))
        XCTAssertGreaterThanOrEqual(silent.pingsReceived, 1)
        try await silent.channel.close()
        try await group.shutdownGracefully()
    }

    /// A server that answers a call with bytes that are not a frame: the call fails with UNAVAILABLE,
    /// saying the server broke the protocol, and the client does not hang or crash.
    func testAMalformedFrameFromTheServerFailsTheCallClearly() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // A 1-byte frame holding a tag with wire type 3 (a group), which no frame may carry.
        let silent = try SilentServer.start(pki: pki, group: group, answeringRequestsWith: [0, 0, 0, 1, 0x0B])
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [silent.port])) { client in
            do {
                _ = try await YediEcho.Echo.Client(client).echo(.init(text: "x"), options: .init(retry: false))
                XCTFail("expected UNAVAILABLE")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .unavailable)
                XCTAssertTrue(error.message.contains("the server broke the protocol: malformed frame"), error.message)
            }
        }
        try await silent.channel.close()
        try await group.shutdownGracefully()
    }

    /// The client's graceful shutdown lets a call in flight finish.
    func testClientShutdownLetsInFlightCallsFinish() async throws {
        let service = EchoTestService()
        let server = try await RunningServer.start(pki: pki, services: [service])
        let client = try RPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port]))
        let running = Task { await client.run() }
        let call = Task { try await YediEcho.Echo.Client(client).echo(.init(text: "sleep:300")) }
        let started = await eventually { service.probe.startedCalls == ["sleep:300"] }
        XCTAssertTrue(started)
        client.beginGracefulShutdown()
        let reply = try await call.value
        XCTAssertEqual(reply.text, "sleep:300")
        do {
            _ = try await YediEcho.Echo.Client(client).echo(.init(text: "late"))
            XCTFail("expected UNAVAILABLE after shutdown")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unavailable)
        }
        await running.value
        await server.stop()
    }
}

/// Completes TLS, sends SETTINGS, then ignores everything (counting pings): a peer that hung. Or, with
/// `answeringRequestsWith`, answers every REQUEST with those bytes: a peer that broke the protocol.
final class SilentServer: Sendable {
    private let server: FrameServer
    private let pings: LockedValue<Int>

    var channel: any Channel { server.channel }
    var port: Int { server.port }
    var pingsReceived: Int { pings.value }

    private init(server: FrameServer, pings: LockedValue<Int>) {
        self.server = server
        self.pings = pings
    }

    static func start(pki: TestPKI, group: any EventLoopGroup, answeringRequestsWith reply: [UInt8]? = nil) throws
        -> SilentServer
    {
        let pings = LockedValue(0)
        let server = try FrameServer.start(pki: pki, group: group) { SilentHandler(pings: pings, reply: reply) }
        return SilentServer(server: server, pings: pings)
    }
}

private final class SilentHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let pings: LockedValue<Int>
    let reply: [UInt8]?

    init(pings: LockedValue<Int>, reply: [UInt8]?) {
        self.pings = pings
        self.reply = reply
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSEvent {
            var buffer = ByteBuffer()
            try? buffer.writeFrame(YediRPC.Frame(kind: .settings, maxConcurrentCalls: 10, maxFrameBytes: 1 << 20))
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let frame = try? InboundFrame.read(unwrapInboundIn(data)) else { return }
        if frame.kind == .ping { pings.withLock { $0 += 1 } }
        if frame.kind == .request, let reply {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: reply)), promise: nil)
        }
    }
}
