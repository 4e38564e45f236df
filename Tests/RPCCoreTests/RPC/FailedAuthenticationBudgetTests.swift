import NIOCore
import NIOPosix
import RPCAccess
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// A connection that keeps sending bad tokens is closed once it passes its budget, so a flood of
/// invalid tokens costs the server at most the budget per connection; other connections carry on.
/// (Part of the token cache's work: `swift test --filter TokenCache` finds it.)
final class FailedAuthenticationBudgetTests: XCTestCase {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    override func tearDown() async throws {
        try await group.shutdownGracefully()
    }

    func testTokenCacheFailedAuthenticationBudgetClosesThatConnectionOnly() async throws {
        let pki = try TestPKI.get()
        let server = try await RunningServer.start(
            pki: pki,
            services: [EchoTestService()],
            interceptors: [
                AuthenticationInterceptor(
                    verifier: try pki.tokenVerifier(), failureLimit: 3, failurePeriod: .seconds(60))
            ]
        )
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let echo = YediEcho.Echo.Client(client)
            let good = CallOptions(metadata: ["authorization": TestAccessToken.customer.authorization])
            _ = try await echo.echo(.init(text: "before"), options: good)

            let flood = try RawRPCConnection(pki: pki, group: group, port: server.port)
            var requests: [YediRPC.Frame] = []
            for id in 1...4 as ClosedRange<UInt64> {
                var request = try RawRPCConnection.request(id, text: "x")
                request.metadata = [.init(key: "authorization", value: "Bearer not-a-token-\(id)")]
                requests.append(request)
            }
            try flood.send(requests)
            let (frames, _) = try flood.framesUntilClosed()
            let ends = frames.filter { $0.kind == .end }
            XCTAssertEqual(ends.count, 4)
            XCTAssertTrue(ends.allSatisfy { $0.status?.code == UInt32(StatusCode.unauthenticated.rawValue) })
            let goaway = try XCTUnwrap(frames.first { $0.kind == .goaway }, "no GOAWAY before the close")
            XCTAssertTrue(goaway.status?.message.contains("too many failed authentications") ?? false)

            // Another connection, and the good client's own, are served as before.
            _ = try await echo.echo(.init(text: "after"), options: good)
        }
        await server.stop()
    }

    func testTokenCacheFailuresUnderTheBudgetKeepTheConnection() async throws {
        let pki = try TestPKI.get()
        let server = try await RunningServer.start(
            pki: pki,
            services: [EchoTestService()],
            interceptors: [
                AuthenticationInterceptor(
                    verifier: try pki.tokenVerifier(), failureLimit: 3, failurePeriod: .seconds(60))
            ]
        )
        let connection = try RawRPCConnection(pki: pki, group: group, port: server.port)
        var requests: [YediRPC.Frame] = []
        for id in 1...3 as ClosedRange<UInt64> {
            var request = try RawRPCConnection.request(id, text: "x")
            request.metadata = [.init(key: "authorization", value: "Bearer not-a-token")]
            requests.append(request)
        }
        var signedIn = try RawRPCConnection.request(4, text: "a good token after three bad ones")
        signedIn.metadata = [.init(key: "authorization", value: TestAccessToken.customer.authorization)]
        requests.append(signedIn)
        try connection.send(requests)
        XCTAssertTrue(connection.waitForEnds(count: 4))
        let frames = try connection.closeAndCollect()
        XCTAssertNil(frames.first { $0.kind == .goaway }, "closed under the budget")
        XCTAssertEqual(
            frames.filter { $0.kind == .end && ($0.status?.code ?? 0) == 0 }.count, 1, "the good token was served")
        await server.stop()
    }
}
