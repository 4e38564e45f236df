import Logging
import MetricsTestKit
import NIOPosix
import RPCObservability
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// Logs and metrics record the status the client received, also when the connection ended the call
/// before its handler returned (deadline, shutdown).
final class StatusRecordingTests: XCTestCase {
    var pki: TestPKI!

    override func setUp() async throws {
        pki = try TestPKI.get()
    }

    /// The deadline ends the call with DEADLINE_EXCEEDED; the handler then sees a cancellation.
    func testACallEndedByItsDeadlineIsRecordedAsDeadlineExceeded() async throws {
        let capture = LogCapture()
        let metrics = TestMetrics()
        let service = EchoTestService()
        let server = try await RunningServer.start(
            pki: pki,
            services: [service],
            interceptors: [
                ServerLoggingInterceptor(requestIDs: { "id" }), ServerMetricsInterceptor(factory: metrics),
            ],
            logger: capture.logger()
        )
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            do {
                _ = try await YediEcho.Echo.Client(client).echo(
                    .init(text: "hang"), options: .init(timeout: .milliseconds(200), retry: false))
                XCTFail("expected DEADLINE_EXCEEDED")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .deadlineExceeded)
            }
        }
        let logged = await eventually { capture.all.contains { $0.message == "rpc" } }
        XCTAssertTrue(logged)
        XCTAssertEqual(capture.all.first { $0.message == "rpc" }?.metadata["rpc.status"], "DEADLINE_EXCEEDED")
        await server.stop()
        let method = [("method", "/yedi.echo.Echo/Echo")]
        XCTAssertEqual(
            metrics.counterTotal(
                label: "yedi_rpc_server_errors_total", dimensions: method + [("code", "DEADLINE_EXCEEDED")]),
            1)
        XCTAssertEqual(metrics.counterTotal(label: "yedi_rpc_server_errors_total"), 1)
    }

    /// A stream cut when the shutdown grace period ran out ends UNAVAILABLE for its client, even when
    /// its handler takes the cancellation quietly and returns.
    func testAStreamCutByShutdownIsRecordedAsUnavailable() async throws {
        let capture = LogCapture()
        let started = LockedValue(false)
        let service = RawHandlerService(method: YediEcho.Echo.Method.expand.descriptor) { _, _ in
            started.withLock { $0 = true }
            try? await Task.sleep(for: .seconds(3600))
            return []
        }
        let server = try await RunningServer.start(
            pki: pki,
            services: [service],
            interceptors: [ServerLoggingInterceptor(requestIDs: { "id" })],
            logger: capture.logger()
        ) { configuration in
            configuration.shutdownGracePeriod = .milliseconds(100)
        }
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let stream = Task {
                try await YediEcho.Echo.Client(client).expand(.init(count: 1, text: "stream")) { responses in
                    for try await _ in responses {}
                }
            }
            let running = await eventually { started.value }
            XCTAssertTrue(running)
            server.server.beginGracefulShutdown()
            do {
                try await stream.value
                XCTFail("expected UNAVAILABLE")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .unavailable)
            }
        }
        _ = await server.task.result
        let logged = await eventually { capture.all.contains { $0.message == "rpc" } }
        XCTAssertTrue(logged)
        XCTAssertEqual(capture.all.first { $0.message == "rpc" }?.metadata["rpc.status"], "UNAVAILABLE")
    }

    /// A call refused before it starts (here: the concurrency limit) is logged and counted as an error
    /// too, though no handler ran.
    func testACallRefusedForTheConcurrencyLimitIsRecorded() async throws {
        let capture = LogCapture()
        let metrics = TestMetrics()
        let gate = HandlerGate()
        let service = RawHandlerService { _, _ in
            await gate.pass()
            return []
        }
        let server = try await RunningServer.start(
            pki: pki,
            services: [service],
            interceptors: [
                ServerLoggingInterceptor(requestIDs: { "id" }), ServerMetricsInterceptor(factory: metrics),
            ],
            logger: capture.logger()
        ) { configuration in
            configuration.limits.maxConcurrentCalls = 1
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let connection = try RawRPCConnection(pki: pki, group: group, port: server.port)
        try connection.send([
            try RawRPCConnection.request(1, text: "held"), try RawRPCConnection.request(2, text: "refused"),
        ])
        XCTAssertTrue(connection.waitForEnds(count: 1))
        gate.open()
        XCTAssertTrue(connection.waitForEnds(count: 2))
        _ = try connection.closeAndCollect()
        await server.stop()
        try await group.shutdownGracefully()

        let statuses = capture.all.filter { $0.message == "rpc" }.compactMap { $0.metadata["rpc.status"] }
        XCTAssertEqual(statuses.sorted(), ["OK", "RESOURCE_EXHAUSTED"])
        let method = [("method", "/yedi.echo.Echo/Echo")]
        XCTAssertEqual(metrics.counterTotal(label: "yedi_rpc_server_calls_total", dimensions: method), 2)
        XCTAssertEqual(
            metrics.counterTotal(
                label: "yedi_rpc_server_errors_total", dimensions: method + [("code", "RESOURCE_EXHAUSTED")]),
            1)
        XCTAssertEqual(try metrics.expectTimer("yedi_rpc_server_duration_seconds", method).values.count, 1)
    }
}
