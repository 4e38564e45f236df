import Dispatch
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// Graceful shutdown: streams end at once telling their clients to reconnect elsewhere, unary calls get
/// the grace period, and `run()` returns only once every handler has returned.
final class ServerShutdownTests: XCTestCase {
    var pki: TestPKI!

    override func setUp() async throws {
        pki = try TestPKI.get()
    }

    func testOpenStreamsEndPromptlyWithUnavailableWhileUnaryCallsFinish() async throws {
        let service = EchoTestService()
        let server = try await RunningServer.start(pki: pki, services: [service]) { configuration in
            configuration.shutdownGracePeriod = .seconds(20)
        }
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let echo = YediEcho.Echo.Client(client)
            let firstMessage = LockedValue(false)
            let stream = Task {
                try await echo.expand(.init(count: 1, text: "hang-after")) { responses in
                    for try await _ in responses { firstMessage.withLock { $0 = true } }
                }
            }
            let unary = Task { try await echo.echo(.init(text: "sleep:600")) }
            let running = await eventually {
                firstMessage.value && service.probe.startedCalls.contains("sleep:600")
            }
            XCTAssertTrue(running)
            let begin = ContinuousClock.now
            server.server.beginGracefulShutdown()
            do {
                try await stream.value
                XCTFail("the stream should end UNAVAILABLE")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .unavailable)
                XCTAssertTrue(error.message.contains("reconnect"), error.message)
            }
            XCTAssertLessThan(ContinuousClock.now - begin, .seconds(2), "the stream waited for the grace period")
            let reply = try await unary.value
            XCTAssertEqual(reply.text, "sleep:600", "a unary call in flight still finishes within the grace period")
        }
        _ = await server.task.result
    }

    /// A handler that ignores cancellation still runs when the connection is gone: `run()` waits for it.
    func testRunReturnsOnlyAfterEveryHandlerReturned() async throws {
        let finished = LockedValue(false)
        let started = LockedValue(false)
        let service = RawHandlerService { _, _ in
            started.withLock { $0 = true }
            await withCheckedContinuation { continuation in
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) { continuation.resume() }
            }
            finished.withLock { $0 = true }
            return []
        }
        let server = try await RunningServer.start(pki: pki, services: [service]) { configuration in
            configuration.shutdownGracePeriod = .milliseconds(10)
        }
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let call = Task { try await YediEcho.Echo.Client(client).echo(.init(text: "x")) }
            let running = await eventually { started.value }
            XCTAssertTrue(running)
            await server.stop()
            XCTAssertTrue(finished.value, "run() returned while a handler was still running")
            _ = try? await call.value
        }
    }
}
