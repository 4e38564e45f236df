import MetricsTestKit
import RPCCore
import RPCObservability
import RPCTestSupport
import XCTest
import YediProto

/// Per-method counters, latency timers and error counters, on both sides.
final class MetricsInterceptorTests: XCTestCase {
    func testServerAndClientMetricsCountCallsLatencyAndErrorsByCode() async throws {
        let pki = try TestPKI.get()
        let serverMetrics = TestMetrics()
        let clientMetrics = TestMetrics()
        let server = try await RunningServer.start(
            pki: pki,
            services: [EchoTestService()],
            interceptors: [ServerMetricsInterceptor(factory: serverMetrics)]
        )
        let configuration = pki.rpcClientConfiguration(ports: [server.port]) {
            $0.interceptors = [ClientMetricsInterceptor(factory: clientMetrics)]
        }
        try await withRPCClient(configuration: configuration) { client in
            let echo = YediEcho.Echo.Client(client)
            for _ in 0..<3 { _ = try await echo.echo(.init(text: "ok")) }
            _ = try? await echo.echo(.init(text: "fail:5:gone"))
            _ = try? await echo.echo(.init(text: "fail:7:no"))
        }
        await server.stop()

        let method = [("method", "/yedi.echo.Echo/Echo")]
        for (metrics, side) in [(serverMetrics, "server"), (clientMetrics, "client")] {
            XCTAssertEqual(metrics.counterTotal(label: "yedi_rpc_\(side)_calls_total", dimensions: method), 5, side)
            XCTAssertEqual(try metrics.expectTimer("yedi_rpc_\(side)_duration_seconds", method).values.count, 5, side)
            XCTAssertTrue(
                try metrics.expectTimer("yedi_rpc_\(side)_duration_seconds", method).values.allSatisfy { $0 > 0 })
            XCTAssertEqual(
                metrics.counterTotal(
                    label: "yedi_rpc_\(side)_errors_total", dimensions: method + [("code", "NOT_FOUND")]),
                1, side)
            XCTAssertEqual(
                metrics.counterTotal(
                    label: "yedi_rpc_\(side)_errors_total", dimensions: method + [("code", "PERMISSION_DENIED")]),
                1, side)
            XCTAssertEqual(metrics.counterTotal(label: "yedi_rpc_\(side)_errors_total"), 2, side)
        }
    }
}
