import NIOCore
import NIOPosix
import RPCTLS
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// Every call ends, with the status that says why: frames that cannot be sent fail their call alone,
/// and nothing waits forever for a connection or for the server's SETTINGS.
final class CallsAlwaysEndTests: XCTestCase {
    var pki: TestPKI!

    override func setUp() async throws {
        pki = try TestPKI.get()
    }

    private func assertRPCError(
        _ code: StatusCode,
        containing text: String? = nil,
        file: StaticString = #filePath,
        line: UInt = #line,
        _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            XCTFail("expected \(code)", file: file, line: line)
        } catch let error as RPCError {
            XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
            if let text { XCTAssertTrue(error.message.contains(text), error.message, file: file, line: line) }
        } catch {
            XCTFail("expected an RPCError, got \(error)", file: file, line: line)
        }
    }

    // MARK: Frames the server would refuse

    /// The server announced a 64 KiB frame limit: a bigger request fails alone, locally, and the call
    /// sharing its connection goes on.
    func testRequestAboveTheAnnouncedFrameLimitFailsOnlyThatCall() async throws {
        let service = EchoTestService()
        let server = try await RunningServer.start(pki: pki, services: [service]) { configuration in
            configuration.limits.maxFrameBytes = 64 << 10
        }
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let echo = YediEcho.Echo.Client(client)
            let held = Task { try await echo.echo(.init(text: "hang")) }
            let started = await eventually { service.probe.startedCalls == ["hang"] }
            XCTAssertTrue(started)
            await self.assertRPCError(.resourceExhausted, containing: "65536") {
                _ = try await echo.echo(.init(payload: [UInt8](repeating: 1, count: 100 << 10)))
            }
            // The other call was not disturbed: it ends when its caller gives up, not before.
            held.cancel()
            await self.assertRPCError(.cancelled) { _ = try await held.value }
            let after = try await echo.echo(.init(text: "after"))
            XCTAssertEqual(after.text, "after")
        }
        await server.stop()
    }

    // MARK: Frames that cannot be encoded

    func testMetadataValueWithNULFailsTheCallAtOnce() async throws {
        let server = try await RunningServer.start(pki: pki, services: [EchoTestService()])
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let echo = YediEcho.Echo.Client(client)
            await self.assertRPCError(.invalidArgument, containing: "NUL") {
                _ = try await echo.echo(
                    .init(text: "x"),
                    options: .init(timeout: .seconds(10), metadata: ["x-note": "a\u{0}b"], retry: false)
                )
            }
            let after = try await echo.echo(.init(text: "after"))
            XCTAssertEqual(after.text, "after")
        }
        await server.stop()
    }

    /// A status message or a trailer the server cannot encode still ends the call: as INTERNAL.
    func testStatusOrTrailerWithNULStillEndsTheCall() async throws {
        let service = RawHandlerService { payload, _ in
            let request = try YediEcho.EchoRequest(serializedBytes: payload)
            switch request.text {
            case "status": throw RPCError(code: .notFound, message: "no\u{0}such")
            default: throw RPCError(code: .notFound, message: "trailer", metadata: ["x-why": "a\u{0}b"])
            }
        }
        let server = try await RunningServer.start(pki: pki, services: [service])
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let echo = YediEcho.Echo.Client(client)
            for text in ["status", "trailer"] {
                await self.assertRPCError(.internalError, containing: "could not be encoded") {
                    _ = try await echo.echo(.init(text: text), options: .init(timeout: .seconds(10), retry: false))
                }
            }
        }
        await server.stop()
    }

    // MARK: Waiting for a connection

    /// A server that completes TLS and never sends SETTINGS: the connection attempt gives up after the
    /// connect timeout, so calls fail with UNAVAILABLE instead of waiting for their deadline.
    func testWaitingForSettingsHasATimeout() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let mute = try MuteServer.start(pki: pki, group: group)
        let configuration = pki.rpcClientConfiguration(ports: [mute.port]) { configuration in
            configuration.connectTimeout = .milliseconds(300)
        }
        try await withRPCClient(configuration: configuration) { client in
            await self.assertRPCError(.unavailable, containing: "SETTINGS") {
                _ = try await YediEcho.Echo.Client(client).echo(
                    .init(text: "anyone?"), options: .init(timeout: .seconds(10), retry: false))
            }
        }
        try await mute.channel.close()
        try await group.shutdownGracefully()
    }

    /// A call cancelled while no connection is ready ends at once with CANCELLED.
    func testCancelledCallDoesNotWaitForAConnection() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let mute = try MuteServer.start(pki: pki, group: group)
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [mute.port])) { client in
            let connecting = await eventually {
                client.connectionStates.contains { if case .connecting = $0 { true } else { false } }
            }
            XCTAssertTrue(connecting)
            let call = Task { try await YediEcho.Echo.Client(client).echo(.init(text: "x")) }
            let waiting = await eventually { client.callsWaitingForConnection == 1 }
            XCTAssertTrue(waiting)
            call.cancel()
            // A guard, not a measurement: the client's shutdown below would end a call still waiting.
            let outcome = await withTaskGroup(of: (any Error)??.self) { group in
                group.addTask {
                    do {
                        _ = try await call.value
                        return .some(nil)
                    } catch {
                        return .some(error)
                    }
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(10))
                    return .none
                }
                let first = await group.next()!
                group.cancelAll()
                return first
            }
            guard let outcome else { return XCTFail("the cancelled call is still waiting for a connection") }
            XCTAssertEqual((outcome as? RPCError)?.code, .cancelled, "\(String(describing: outcome))")
        }
        try await mute.channel.close()
        try await group.shutdownGracefully()
    }

    /// Less than a microsecond left is an expired deadline: it must not reach the server as 0, which
    /// means "no deadline".
    func testADeadlineUnderOneMicrosecondIsNotSentAsNoDeadline() {
        let now = NIODeadline.uptimeNanoseconds(1_000_000)
        XCTAssertNil(ClientConnectionHandler.timeoutMicros(until: now + .nanoseconds(999), now: now))
        XCTAssertNil(ClientConnectionHandler.timeoutMicros(until: now, now: now))
        XCTAssertEqual(ClientConnectionHandler.timeoutMicros(until: now + .nanoseconds(1_000), now: now), 1)
        XCTAssertEqual(ClientConnectionHandler.timeoutMicros(until: now + .milliseconds(2), now: now), 2_000)
    }
}

/// Completes the TLS handshake, then says nothing at all (no SETTINGS): a server that hung.
final class MuteServer: Sendable {
    let channel: any Channel

    var port: Int { channel.localAddress!.port! }

    private init(channel: any Channel) {
        self.channel = channel
    }

    static func start(pki: TestPKI, group: any EventLoopGroup) throws -> MuteServer {
        let context = try TLSContext(configuration: pki.serverConfiguration())
        let channel = try ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(try TLSHandler(serverContext: context))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .wait(timeout: .seconds(10))
        return MuteServer(channel: channel)
    }
}
