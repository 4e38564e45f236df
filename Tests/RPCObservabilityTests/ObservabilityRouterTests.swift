import NIOHTTP1
import Prometheus
import SmallHTTPServer
import XCTest

@testable import RPCObservability

/// The routing decisions alone, without sockets.
final class ObservabilityRouterTests: XCTestCase {
    private func response(_ method: HTTPMethod, _ uri: String, serving: Bool = true) -> HTTPServerResponse {
        let router = ObservabilityRouter(registry: PrometheusCollectorRegistry(), isServing: { serving })
        return router.response(to: HTTPRequestHead(version: .http1_1, method: method, uri: uri))
    }

    func testRoutes() {
        XCTAssertEqual(response(.GET, "/metrics").status, .ok)
        XCTAssertEqual(response(.HEAD, "/metrics").status, .ok)
        XCTAssertEqual(
            response(.GET, "/metrics").headers.first(name: "content-type"), ObservabilityRouter.prometheusContentType)
        XCTAssertEqual(response(.GET, "/healthz").status, .ok)
        XCTAssertEqual(response(.GET, "/healthz", serving: false).status, .serviceUnavailable)
        XCTAssertEqual(response(.GET, "/healthz?probe=k8s").status, .ok)
        XCTAssertEqual(response(.GET, "/other").status, .notFound)
        XCTAssertEqual(response(.POST, "/metrics").status, .methodNotAllowed)
        XCTAssertEqual(response(.OPTIONS, "/healthz").status, .methodNotAllowed)
    }

    func testPathDropsTheQuery() {
        XCTAssertEqual(ObservabilityRouter.path(of: "/metrics?name[]=x"), "/metrics")
        XCTAssertEqual(ObservabilityRouter.path(of: "/metrics"), "/metrics")
        XCTAssertEqual(ObservabilityRouter.path(of: "?"), "")
    }
}
