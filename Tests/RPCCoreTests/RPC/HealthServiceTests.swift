import RPCCore
import RPCTestSupport
import XCTest
import YediProto

/// Every server hosts `yedi.health.Health`: Check and the streaming Watch.
final class HealthServiceTests: XCTestCase {
    func testCheckAndWatch() async throws {
        let pki = try TestPKI.get()
        let server = try await RunningServer.start(pki: pki, services: [EchoTestService()])
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let health = YediHealth.Health.Client(client)
            let whole = try await health.check(.init(service: ""))
            XCTAssertEqual(whole.status, .serving)
            let echo = try await health.check(.init(service: "yedi.echo.Echo"))
            XCTAssertEqual(echo.status, .serving)
            do {
                _ = try await health.check(.init(service: "yedi.nope.Nope"))
                XCTFail("expected NOT_FOUND")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .notFound)
            }

            let seen = try await health.watch(.init(service: "yedi.echo.Echo")) { stream in
                var seen: [YediHealth.HealthCheckResponse.ServingStatus] = []
                for try await update in stream {
                    seen.append(update.status)
                    switch seen.count {
                    case 1: server.server.health.setStatus(.notServing, for: "yedi.echo.Echo")
                    case 2: server.server.health.setStatus(.serving, for: "yedi.echo.Echo")
                    default: return seen
                    }
                }
                return seen
            }
            XCTAssertEqual(seen, [.serving, .notServing, .serving])

            let unknown = try await health.watch(.init(service: "yedi.later.Later")) {
                stream -> YediHealth.HealthCheckResponse.ServingStatus? in
                for try await update in stream { return update.status }
                return nil
            }
            XCTAssertEqual(unknown, .serviceUnknown)
        }
        await server.stop()
    }
}
