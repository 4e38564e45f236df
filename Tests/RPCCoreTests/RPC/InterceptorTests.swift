import Logging
import MetricsTestKit
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// The provided interceptors: logging, tracing, authentication, and their ordering.
final class InterceptorTests: XCTestCase {
    var pki: TestPKI!

    override func setUp() async throws {
        pki = try TestPKI.get()
    }

    func testLoggingRecordsMethodStatusDurationAndRequestIDButNoSecrets() async throws {
        let capture = LogCapture()
        let service = EchoTestService()
        let serverWithCapture = try await RunningServer.start(
            pki: pki,
            services: [service],
            interceptors: [ServerLoggingInterceptor(requestIDs: { "generated-id" })],
            logger: capture.logger()
        )
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [serverWithCapture.port])) { client in
            let echo = YediEcho.Echo.Client(client)
            _ = try await echo.echo(
                .init(text: "password=correct-horse"),
                options: .init(metadata: ["authorization": "Bearer secret-token-123", "request-id": "req-7"])
            )
            _ = try? await echo.echo(.init(text: "fail:5:no such thing"))
        }
        await serverWithCapture.stop()

        let lines = capture.all.filter { $0.message == "rpc" }
        XCTAssertEqual(lines.count, 2)
        let first = try XCTUnwrap(lines.first)
        XCTAssertEqual(first.metadata["rpc.method"], "/yedi.echo.Echo/Echo")
        XCTAssertEqual(first.metadata["rpc.status"], "OK")
        XCTAssertEqual(first.metadata["request-id"], "req-7")
        XCTAssertNotNil(first.metadata["rpc.duration_ms"].flatMap(Double.init))
        let second = try XCTUnwrap(lines.last)
        XCTAssertEqual(second.metadata["rpc.status"], "NOT_FOUND")
        XCTAssertEqual(second.metadata["request-id"], "generated-id")
        for record in capture.all {
            XCTAssertFalse(record.line.contains("secret-token-123"), record.line)
            XCTAssertFalse(record.line.contains("correct-horse"), record.line)
        }
    }

    /// A handler calling another service passes the trace on: both servers see the same trace id,
    /// and the second sees the first's span as its parent.
    func testTraceparentPropagatesFromIncomingToOutgoingCalls() async throws {
        let ids = TraceIDGenerator { count in (0..<count).map { UInt8(truncatingIfNeeded: $0 + count) } }
        let downstream = EchoTestService()
        let downstreamServer = try await RunningServer.start(
            pki: pki, services: [downstream], interceptors: [ServerTracingInterceptor(ids: ids)])
        let forwarder = try RPCClient(
            configuration: pki.rpcClientConfiguration(ports: [downstreamServer.port], identity: "content") {
                $0.interceptors = [ClientTracingInterceptor(ids: ids)]
            })
        let forwarding = Task { await forwarder.run() }
        let upstream = ForwardingEcho(next: YediEcho.Echo.Client(forwarder))
        let upstreamServer = try await RunningServer.start(
            pki: pki, services: [upstream], interceptors: [ServerTracingInterceptor(ids: ids)])

        let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [upstreamServer.port])) { client in
            _ = try await YediEcho.Echo.Client(client).echo(
                .init(text: "traced"), options: .init(metadata: ["traceparent": incoming]))
        }
        let upstreamTrace = try XCTUnwrap(upstream.seenTrace.value)
        XCTAssertEqual(upstreamTrace.traceID, "4bf92f3577b34da6a3ce929d0e0e4736")
        XCTAssertNotEqual(upstreamTrace.spanID, "00f067aa0ba902b7")
        let downstreamContext = try XCTUnwrap(downstream.probe.context(of: "traced"))
        let sent = try XCTUnwrap(downstreamContext.metadata["traceparent"].flatMap(TraceContext.init(traceparent:)))
        XCTAssertEqual(sent.traceID, upstreamTrace.traceID)
        XCTAssertEqual(sent.spanID, upstreamTrace.spanID, "the outgoing parent is the upstream call's span")
        XCTAssertEqual(downstreamContext.trace?.traceID, upstreamTrace.traceID)
        // The service certificate identifies the forwarding service to the downstream server.
        XCTAssertEqual(downstreamContext.peer.serviceName, "content")

        forwarder.beginGracefulShutdown()
        await forwarding.value
        await upstreamServer.stop()
        await downstreamServer.stop()
    }

    func testMalformedTraceparentStartsANewTrace() {
        XCTAssertNil(TraceContext(traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01"))
        XCTAssertNil(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"))
        XCTAssertNil(TraceContext(traceparent: "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        XCTAssertNil(TraceContext(traceparent: "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"))
        XCTAssertNil(TraceContext(traceparent: "garbage"))
        let valid = TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        XCTAssertEqual(valid?.traceparent, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    }

    func testAuthenticationPolicies() async throws {
        let service = EchoTestService()
        let auth = AuthenticationInterceptor(verifier: FakeVerifier()) { method in
            switch method.method {
            case "Expand": .servicesOnly(["content"])
            default: .authenticated
            }
        }
        let server = try await RunningServer.start(pki: pki, services: [service], interceptors: [auth])
        func call(identity: String?, token: String?, streaming: Bool = false) async -> StatusCode {
            do {
                var metadata: Metadata = [:]
                if let token { metadata["authorization"] = token }
                try await withRPCClient(
                    configuration: pki.rpcClientConfiguration(ports: [server.port], identity: identity)
                ) { client in
                    let echo = YediEcho.Echo.Client(client)
                    if streaming {
                        try await echo.expand(.init(count: 1), options: .init(metadata: metadata)) { stream in
                            for try await _ in stream {}
                        }
                    } else {
                        _ = try await echo.echo(.init(text: "auth"), options: .init(metadata: metadata))
                    }
                }
                return .ok
            } catch {
                return (error as? RPCError)?.code ?? .unknown
            }
        }
        let anonymous = await call(identity: nil, token: nil)
        XCTAssertEqual(anonymous, .unauthenticated)
        let badToken = await call(identity: nil, token: "Bearer wrong")
        XCTAssertEqual(badToken, .unauthenticated)
        let malformed = await call(identity: nil, token: "Basic abc")
        XCTAssertEqual(malformed, .unauthenticated)
        let user = await call(identity: nil, token: "Bearer good")
        XCTAssertEqual(user, .ok)
        XCTAssertEqual(service.probe.context(of: "auth")?.caller, .user(AuthenticatedUser(id: "u-1", role: .customer)))
        // Internal method: a user token is not enough; only the allowed service's certificate is.
        let userOnInternal = await call(identity: nil, token: "Bearer good", streaming: true)
        XCTAssertEqual(userOnInternal, .permissionDenied)
        let probeOnInternal = await call(identity: "yedi-probe", token: nil, streaming: true)
        XCTAssertEqual(probeOnInternal, .permissionDenied)
        let otherService = await call(identity: "chat", token: nil, streaming: true)
        XCTAssertEqual(otherService, .permissionDenied)
        let allowedService = await call(identity: "content", token: nil, streaming: true)
        XCTAssertEqual(allowedService, .ok)
        await server.stop()
    }
}

private struct FakeVerifier: AccessTokenVerifier {
    func verify(accessToken: String) async throws -> Caller {
        guard accessToken == "good" else { throw RPCError(code: .unauthenticated, message: "invalid token") }
        return .user(AuthenticatedUser(id: "u-1", role: .customer))
    }
}

/// Answers by calling the next service, as a handler of a real service would.
private final class ForwardingEcho: YediEcho.Echo.ServiceProtocol {
    let next: YediEcho.Echo.Client
    let seenTrace = LockedValue<TraceContext?>(nil)

    init(next: YediEcho.Echo.Client) { self.next = next }

    func echo(_ request: YediEcho.EchoRequest, context: ServerContext) async throws -> YediEcho.EchoResponse {
        seenTrace.withLock { $0 = context.trace }
        return try await next.echo(request)
    }

    func expand(
        _ request: YediEcho.ExpandRequest,
        writer: RPCWriter<YediEcho.EchoResponse>,
        context: ServerContext
    ) async throws {}
}

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
