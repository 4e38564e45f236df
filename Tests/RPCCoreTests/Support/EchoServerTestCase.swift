import RPCCore
import RPCTestSupport
import XCTest
import YediProto

/// A test case with a fresh `EchoTestService` on a TLS server for every test, and a client for it.
class EchoServerTestCase: XCTestCase {
    var pki: TestPKI!
    var service: EchoTestService!
    var server: RunningServer!

    override func setUp() async throws {
        pki = try TestPKI.get()
        service = EchoTestService()
        server = try await RunningServer.start(pki: pki, services: [service])
    }

    override func tearDown() async throws {
        await server?.stop()
    }

    /// Runs `body` with a typed echo client of the server (the probe's certificate, mutual TLS).
    func withEcho<T: Sendable>(
        configure: (inout ClientConfiguration) -> Void = { _ in },
        _ body: (YediEcho.Echo.Client) async throws -> T
    ) async throws -> T {
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port], configure: configure)) {
            try await body(YediEcho.Echo.Client($0))
        }
    }
}
