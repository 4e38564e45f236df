import Dispatch
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// Client and server agree on which calls hold a slot under the server's concurrency limit: a call the
/// client gave up on (cancelled, deadline passed) keeps its slot on both sides until the server's END
/// says its handler returned, so the client never sends a call the server must refuse for the limit.
final class ConcurrencyLimitTests: XCTestCase {
    var pki: TestPKI!

    override func setUp() async throws {
        pki = try TestPKI.get()
    }

    /// One slot; the handler of "slow" ignores cancellation and runs 300 ms.
    private func startOneSlotServer() async throws -> RunningServer {
        let service = RawHandlerService { payload, _ in
            let request = try YediEcho.EchoRequest(serializedBytes: payload)
            if request.text == "slow" {
                await withCheckedContinuation { continuation in
                    DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { continuation.resume() }
                }
            }
            return try YediEcho.EchoResponse(text: request.text).serializedBytes()
        }
        return try await RunningServer.start(pki: pki, services: [service]) { configuration in
            configuration.limits.maxConcurrentCalls = 1
        }
    }

    func testACallStartedRightAfterACancelWaitsForTheSlotInsteadOfBeingRefused() async throws {
        let server = try await startOneSlotServer()
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let echo = YediEcho.Echo.Client(client)
            _ = try await echo.echo(.init(text: "warm-up"))
            let slow = Task { try await echo.echo(.init(text: "slow")) }
            try await Task.sleep(for: .milliseconds(50))
            slow.cancel()
            _ = try? await slow.value
            let next = try await echo.echo(.init(text: "next"), options: .init(retry: false))
            XCTAssertEqual(next.text, "next")
        }
        await server.stop()
    }

    func testACallStartedRightAfterADeadlinePassedWaitsForTheSlotInsteadOfBeingRefused() async throws {
        let server = try await startOneSlotServer()
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let echo = YediEcho.Echo.Client(client)
            _ = try await echo.echo(.init(text: "warm-up"))
            do {
                _ = try await echo.echo(.init(text: "slow"), options: .init(timeout: .milliseconds(50)))
                XCTFail("the deadline should have passed")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .deadlineExceeded)
            }
            let next = try await echo.echo(.init(text: "next"), options: .init(retry: false))
            XCTAssertEqual(next.text, "next")
        }
        await server.stop()
    }
}
