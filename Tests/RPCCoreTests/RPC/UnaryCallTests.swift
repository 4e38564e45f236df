import NIOCore
import RPCAccess
import RPCCore
import RPCTestSupport
import XCTest
import YediProto

/// Unary calls over real TLS sockets: results, statuses, deadlines, cancellation.
final class UnaryCallTests: EchoServerTestCase {
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
            if let text { XCTAssertTrue(error.message.contains(text), "\(error.message)", file: file, line: line) }
        } catch {
            XCTFail("expected an RPCError, got \(error)", file: file, line: line)
        }
    }

    func testEchoRoundTrip() async throws {
        let reply = try await withEcho { echo in
            try await echo.echo(.init(payload: [0, 1, 2, 255], text: "안녕하세요 👋"))
        }
        XCTAssertEqual(reply, YediEcho.EchoResponse(payload: [0, 1, 2, 255], text: "안녕하세요 👋"))
        XCTAssertEqual(service.probe.finishedCalls, ["안녕하세요 👋"])
    }

    func testHandlerErrorsKeepTheirCodeAndMessage() async throws {
        try await withEcho { echo in
            await self.assertRPCError(.notFound, containing: "no such post") {
                _ = try await echo.echo(.init(text: "fail:5:no such post"))
            }
            await self.assertRPCError(.permissionDenied) {
                _ = try await echo.echo(.init(text: "fail:7:not yours"))
            }
        }
    }

    func testUnexpectedErrorsBecomeInternalWithoutDetails() async throws {
        try await withEcho { echo in
            do {
                _ = try await echo.echo(.init(text: "crash"))
                XCTFail("expected INTERNAL")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .internalError)
                XCTAssertEqual(error.message, "internal error")
                XCTAssertFalse("\(error)".contains("hunter2"))
            }
        }
    }

    func testUnknownMethodAndService() async throws {
        let unknownMethod = RPCMethod<YediEcho.EchoRequest, YediEcho.EchoResponse>(
            service: "yedi.echo.Echo", method: "Shout", kind: .unary, idempotency: .unknown, access: .anyone(apps: .any)
        )
        let unknownService = RPCMethod<YediEcho.EchoRequest, YediEcho.EchoResponse>(
            service: "yedi.nothing.Here", method: "Echo", kind: .unary, idempotency: .unknown,
            access: .anyone(apps: .any))
        try await withEcho { echo in
            await self.assertRPCError(.unimplemented, containing: "unknown method Shout of service yedi.echo.Echo") {
                _ = try await echo.rpcClient.unary(unknownMethod, .init())
            }
            await self.assertRPCError(.unimplemented, containing: "unknown service yedi.nothing.Here") {
                _ = try await echo.rpcClient.unary(unknownService, .init())
            }
            // The connection still serves calls afterwards.
            let after = try await echo.echo(.init(text: "after"))
            XCTAssertEqual(after.text, "after")
        }
    }

    func testUndecodableRequestIsInvalidArgumentNamingTheType() async throws {
        // A method whose request type the server decodes differently: a Frame sent where EchoRequest is
        // expected does not parse (field 1 is bytes in EchoRequest, a varint in Frame).
        let mismatched = RPCMethod<YediRPC.Frame, YediEcho.EchoResponse>(
            service: "yedi.echo.Echo", method: "Echo", kind: .unary, idempotency: .unknown, access: .anyone(apps: .any))
        try await withEcho { echo in
            await self.assertRPCError(.invalidArgument, containing: "yedi.echo.EchoRequest") {
                _ = try await echo.rpcClient.unary(mismatched, .init(callID: 7))
            }
        }
    }

    func testDeadlineExceededCancelsTheHandler() async throws {
        try await withEcho { echo in
            let start = ContinuousClock.now
            await self.assertRPCError(.deadlineExceeded) {
                _ = try await echo.echo(.init(text: "hang"), options: .init(timeout: .milliseconds(200)))
            }
            XCTAssertLessThan(ContinuousClock.now - start, .seconds(5))
        }
        let cancelled = await eventually { self.service.probe.cancelledCalls == ["hang"] }
        XCTAssertTrue(cancelled, "the server handler was not cancelled at the deadline")
    }

    func testServerEnforcesTheDeadlineItIsSent() async throws {
        // The server cancels on its own clock: its END arrives even if the client waits longer.
        try await withEcho { echo in
            await self.assertRPCError(.deadlineExceeded) {
                _ = try await echo.echo(.init(text: "sleep:5000"), options: .init(timeout: .milliseconds(300)))
            }
        }
        let cancelled = await eventually { self.service.probe.cancelledCalls == ["sleep:5000"] }
        XCTAssertTrue(cancelled)
    }

    func testClientCancellationReachesTheServerHandler() async throws {
        try await withEcho { echo in
            let call = Task { try await echo.echo(.init(text: "hang")) }
            let started = await eventually { self.service.probe.startedCalls.contains("hang") }
            XCTAssertTrue(started)
            call.cancel()
            do {
                _ = try await call.value
                XCTFail("expected CANCELLED")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .cancelled)
            }
            let cancelled = await eventually { self.service.probe.cancelledCalls == ["hang"] }
            XCTAssertTrue(cancelled, "the server handler did not observe the cancellation")
        }
    }

    func testRequestLargerThanTheFrameLimitFailsLocally() async throws {
        try await withEcho { echo in
            await self.assertRPCError(.resourceExhausted, containing: "exceeds the frame limit") {
                _ = try await echo.echo(.init(payload: [UInt8](repeating: 1, count: 4 << 20)))
            }
            // Just under the limit goes through.
            let big = [UInt8](repeating: 7, count: (4 << 20) - 1024)
            let reply = try await echo.echo(.init(payload: big))
            XCTAssertEqual(reply.payload.count, big.count)
        }
    }

    func testPeerIdentityOfTheMutualTLSClientReachesTheHandler() async throws {
        _ = try await withEcho { echo in try await echo.echo(.init(text: "who")) }
        let peer = try XCTUnwrap(service.probe.context(of: "who")?.peer)
        XCTAssertEqual(peer.identity?.commonName, "yedi-probe")
        XCTAssertEqual(peer.identity?.uris, ["spiffe://yedi/client/yedi-probe"])
        XCTAssertNil(peer.serviceName)
        XCTAssertTrue(peer.address.contains("127.0.0.1"))
    }

    func testMetadataReachesTheHandler() async throws {
        _ = try await withEcho { echo in
            try await echo.echo(.init(text: "md"), options: .init(metadata: ["request-id": "r-42", "X-Custom": "값"]))
        }
        let context = try XCTUnwrap(service.probe.context(of: "md"))
        XCTAssertEqual(context.metadata["request-id"], "r-42")
        XCTAssertEqual(context.metadata["x-custom"], "값")
        XCTAssertEqual(context.method.path, "/yedi.echo.Echo/Echo")
    }
}
