import Logging
import RPCAccess
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

    /// The request log runs outside authentication (so refused calls are logged too), and once wrote
    /// `rpc.caller=anonymous` for every authenticated call: it now names the caller authentication found.
    func testTheLogLineOfAnAuthenticatedCallNamesItsCaller() async throws {
        let capture = LogCapture()
        let server = try await RunningServer.start(
            pki: pki,
            services: [EchoTestService()],
            interceptors: [
                ServerLoggingInterceptor(requestIDs: { "id" }),
                AuthenticationInterceptor(verifier: try pki.tokenVerifier()),
            ],
            logger: capture.logger()
        )
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let echo = YediEcho.Echo.Client(client)
            _ = try await echo.echo(
                .init(text: "hi"), options: .init(metadata: ["authorization": TestAccessToken.customer.authorization]))
            _ = try? await echo.echo(.init(text: "hi"))
            _ = try? await echo.echo(
                .init(text: "hi"), options: .init(metadata: ["authorization": TestAccessToken.tampered.authorization]))
        }
        await server.stop()
        let callers = capture.all.filter { $0.message == "rpc" }.compactMap { $0.metadata["rpc.caller"] }
        XCTAssertEqual(callers.count, 3)
        XCTAssertTrue(callers[0].hasPrefix("user h:") && callers[0].hasSuffix(" (customer)"), callers[0])
        XCTAssertEqual(callers.dropFirst(), ["anonymous", "anonymous"])
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

    /// Echo is USER and Expand is SERVICE for "content" (proto/echo.proto); AccessRuleTests covers every
    /// rule and caller, this the details: messages, the caller seen by the handler, on-behalf-of, health.
    func testAuthenticationEnforcesEachMethodsAccessRule() async throws {
        let service = EchoTestService()
        let server = try await RunningServer.start(
            pki: pki, services: [service],
            interceptors: [AuthenticationInterceptor(verifier: try pki.tokenVerifier())])
        func call(
            identity: String?,
            token: String?,
            onBehalfOf: String? = nil,
            streaming: Bool = false,
            text: String = "auth"
        ) async -> RPCError? {
            do {
                var metadata: Metadata = [:]
                if let token { metadata["authorization"] = token }
                if let onBehalfOf { metadata[AuthenticationInterceptor.onBehalfOfMetadataKey] = onBehalfOf }
                try await withRPCClient(
                    configuration: pki.rpcClientConfiguration(ports: [server.port], identity: identity)
                ) { client in
                    let echo = YediEcho.Echo.Client(client)
                    if streaming {
                        try await echo.expand(.init(count: 1, text: text), options: .init(metadata: metadata)) {
                            stream in
                            for try await _ in stream {}
                        }
                    } else {
                        _ = try await echo.echo(.init(text: text), options: .init(metadata: metadata))
                    }
                }
                return nil
            } catch {
                return (error as? RPCError) ?? RPCError(code: .unknown, message: "\(error)")
            }
        }
        let customer = TestAccessToken.customer
        let anonymous = await call(identity: nil, token: nil)
        XCTAssertEqual(anonymous?.code, .unauthenticated)
        XCTAssertEqual(anonymous?.message, "sign-in required: send an access token")
        let badToken = await call(identity: nil, token: "Bearer wrong")
        XCTAssertEqual(badToken?.code, .unauthenticated)
        let malformed = await call(identity: nil, token: "Basic abc")
        XCTAssertEqual(malformed?.code, .unauthenticated)
        let user = await call(identity: nil, token: customer.authorization)
        XCTAssertNil(user)
        XCTAssertEqual(service.probe.context(of: "auth")?.caller, .user(try XCTUnwrap(customer.user)))
        // The probe's client certificate is not a service certificate: without a token it is anonymous.
        let probe = await call(identity: "yedi-probe", token: nil)
        XCTAssertEqual(probe?.code, .unauthenticated)
        // A service may call internal methods only.
        let serviceOnUserMethod = await call(identity: "content", token: nil)
        XCTAssertEqual(serviceOnUserMethod?.code, .permissionDenied)

        // Internal method: a user token is not enough; only the allowed service's certificate is.
        let userOnInternal = await call(identity: nil, token: customer.authorization, streaming: true)
        XCTAssertEqual(userOnInternal?.code, .permissionDenied)
        XCTAssertEqual(
            userOnInternal?.message, "/yedi.echo.Echo/Expand is internal: requires a Yedi service certificate")
        let probeOnInternal = await call(identity: "yedi-probe", token: nil, streaming: true)
        XCTAssertEqual(probeOnInternal?.code, .unauthenticated)
        let otherService = await call(identity: "chat", token: nil, streaming: true)
        XCTAssertEqual(otherService?.code, .permissionDenied)
        XCTAssertEqual(otherService?.message, "service chat may not call /yedi.echo.Echo/Expand")
        let allowedService = await call(identity: "content", token: nil, streaming: true, text: "as-service")
        XCTAssertNil(allowedService)
        XCTAssertEqual(service.probe.context(of: "as-service")?.caller, .service(name: "content"))
        XCTAssertNil(service.probe.context(of: "as-service")?.onBehalfOf)

        // On behalf of a user: verified like any token, for services only.
        let forUser = await call(
            identity: "content", token: nil, onBehalfOf: customer.value, streaming: true, text: "for-user")
        XCTAssertNil(forUser)
        XCTAssertEqual(service.probe.context(of: "for-user")?.onBehalfOf, customer.user)
        XCTAssertEqual(service.probe.context(of: "for-user")?.caller, .service(name: "content"))
        let forExpired = await call(
            identity: "content", token: nil, onBehalfOf: TestAccessToken.expired.value, streaming: true)
        XCTAssertEqual(forExpired?.code, .unauthenticated)
        let userClaimingAnother = await call(
            identity: nil, token: customer.authorization, onBehalfOf: TestAccessToken.designer.value)
        XCTAssertEqual(userClaimingAnother?.code, .permissionDenied)
        let anonymousClaimingAUser = await call(
            identity: nil, token: nil, onBehalfOf: TestAccessToken.designer.value)
        XCTAssertEqual(anonymousClaimingAUser?.code, .permissionDenied)

        // Health stays open to everyone, services included; a bad token (without a service certificate,
        // which would make the token irrelevant) still fails.
        for identity in [nil, "chat"] {
            try await withRPCClient(
                configuration: pki.rpcClientConfiguration(ports: [server.port], identity: identity)
            ) { client in
                let health = try await YediHealth.Health.Client(client).check(.init())
                XCTAssertEqual(health.status, .serving)
                guard identity == nil else { return }
                await assertThrowsRPCError(.unauthenticated) {
                    _ = try await YediHealth.Health.Client(client).check(
                        .init(), options: .init(metadata: ["authorization": "Bearer wrong"]))
                }
            }
        }
        await server.stop()
    }

    func testOnBehalfOfTokensAreRedactedLikeAuthorization() {
        let metadata: Metadata = [AuthenticationInterceptor.onBehalfOfMetadataKey: "user-token", "request-id": "r-1"]
        XCTAssertEqual(metadata.description, "[yedi-on-behalf-of: <redacted>, request-id: r-1]")
    }
}

private func assertThrowsRPCError(
    _ code: StatusCode,
    file: StaticString = #filePath,
    line: UInt = #line,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        XCTFail("expected \(code)", file: file, line: line)
    } catch {
        XCTAssertEqual((error as? RPCError)?.code, code, "\(error)", file: file, line: line)
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
