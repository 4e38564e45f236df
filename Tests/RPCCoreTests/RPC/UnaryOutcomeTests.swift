import RPCTestSupport
import XCTest
import YediProto
import YediSync

@testable import RPCCore

/// A unary call is answered once, after every interceptor returned: what an interceptor does on the way
/// out (a status, trailers, an error of its own) is what the caller receives.
final class UnaryOutcomeTests: XCTestCase {
    var pki: TestPKI!

    override func setUp() async throws {
        pki = try TestPKI.get()
    }

    /// Fails the call after the handler succeeded (an audit write that failed, say).
    private struct FailAfterNext: ServerInterceptor {
        func intercept(
            context: ServerContext,
            next: @Sendable (ServerContext) async throws -> ServerResponse
        ) async throws -> ServerResponse {
            _ = try await next(context)
            throw RPCError(code: .dataLoss, message: "the audit record could not be written")
        }
    }

    func testAnErrorThrownAfterNextReachesTheCaller() async throws {
        let server = try await RunningServer.start(
            pki: pki, services: [EchoTestService()], interceptors: [FailAfterNext()])
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            do {
                let response = try await YediEcho.Echo.Client(client).echo(.init(text: "hello"))
                XCTFail("the interceptor's error was lost: the caller got \(response.text)")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .dataLoss)
                XCTAssertEqual(error.message, "the audit record could not be written")
            }
        }
        await server.stop()
    }

    /// Sees the response and the status, and adds a trailer to an OK answer.
    private final class Observer: ServerInterceptor, @unchecked Sendable {
        let seen = TSanVisibleMutex<[(bytes: Int, code: StatusCode)]>([])

        func intercept(
            context: ServerContext,
            next: @Sendable (ServerContext) async throws -> ServerResponse
        ) async throws -> ServerResponse {
            do {
                var response = try await next(context)
                seen.withLock { $0.append((response.messageBytes, .ok)) }
                response.trailers.add("x-served-by", "observer")
                return response
            } catch let error as RPCError {
                seen.withLock { $0.append((0, error.code)) }
                throw error
            }
        }
    }

    func testAnInterceptorSeesTheResponseAndTheStatusAndAddsTrailers() async throws {
        let observer = Observer()
        let server = try await RunningServer.start(
            pki: pki, services: [EchoTestService()], interceptors: [observer])
        let expected = try YediEcho.EchoResponse(text: "hello").serializedBytes().count
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let reply = try await client.unary(
                YediEcho.Echo.Method.echo.descriptor,
                payload: try YediEcho.EchoRequest(text: "hello").serializedBytes()
            )
            XCTAssertEqual(reply.trailers["x-served-by"], "observer")
            let response = try YediEcho.EchoResponse(serializedBytes: reply.payload)
            XCTAssertEqual(response.text, "hello")
            _ = try? await YediEcho.Echo.Client(client).echo(.init(text: "fail:5:no such thing"))
        }
        await server.stop()
        let seen = observer.seen.withLock { $0 }
        XCTAssertEqual(seen.map(\.code), [.ok, .notFound])
        XCTAssertGreaterThan(seen.first?.bytes ?? 0, 0)
        XCTAssertEqual(seen.first?.bytes, expected)
    }
}
