import CoreMetrics
import CountLimitedCache
import NIOHTTP1
import Prometheus
import RPCObservability
import XCTest

/// The endpoint over a real loopback socket: what each route answers, keep-alive and closing, body limits.
final class ObservabilityServerTests: XCTestCase {
    func testMetricsRendersTheRegistryInPrometheusTextFormat() async throws {
        let registry = PrometheusCollectorRegistry()
        let factory = PrometheusMetricsFactory(registry: registry)
        CoreMetrics.Counter(label: "yedi_test_requests_total", dimensions: [("route", "echo")], factory: factory)
            .increment(by: 3)
        let cache = LRUCache<String, Int>(name: "images", capacity: 2, metricsFactory: factory)
        cache.put(1, forKey: "a")
        _ = cache.get("a")

        let response = try await ObservabilityServer.forTesting(registry: registry).whileRunning { port in
            try await HTTPTestConnection.withConnection(port: port) { try await $0.send(.GET, "/metrics") }
        }

        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.header("content-type"), "text/plain; version=0.0.4; charset=utf-8")
        XCTAssertEqual(response.header("content-length"), String(response.body.utf8.count))
        let lines = response.body.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains("# TYPE yedi_test_requests_total counter"), response.body)
        XCTAssertTrue(lines.contains(#"yedi_test_requests_total{route="echo"} 3"#), response.body)
        XCTAssertTrue(lines.contains(#"yedi_cache_hits_total{cache="images"} 1"#), response.body)
        XCTAssertTrue(lines.contains(#"yedi_cache_items{cache="images"} 1.0"#), response.body)
    }

    func testHealthzFollowsTheHealthClosure() async throws {
        let health = HealthFlag()
        try await ObservabilityServer.forTesting(health: health).whileRunning { port in
            try await HTTPTestConnection.withConnection(port: port) { connection in
                let serving = try await connection.send(.GET, "/healthz")
                XCTAssertEqual(serving.status, .ok)
                XCTAssertEqual(serving.body, "ok\n")

                health.set(false)
                let notServing = try await connection.send(.GET, "/healthz")
                XCTAssertEqual(notServing.status, .serviceUnavailable)
                XCTAssertEqual(notServing.body, "unavailable\n")

                health.set(true)
                let servingAgain = try await connection.send(.GET, "/healthz")
                XCTAssertEqual(servingAgain.status, .ok)
            }
        }
    }

    func testUnknownPathsAre404AndQueriesAreIgnored() async throws {
        try await ObservabilityServer.forTesting().whileRunning { port in
            try await HTTPTestConnection.withConnection(port: port) { connection in
                for path in ["/", "/metrics/", "/health", "/metricsx"] {
                    let response = try await connection.send(.GET, path)
                    XCTAssertEqual(response.status, .notFound, path)
                }
                let withQuery = try await connection.send(.GET, "/healthz?verbose=1")
                XCTAssertEqual(withQuery.status, .ok)
            }
        }
    }

    func testMethodsOtherThanGetAndHeadAre405() async throws {
        try await ObservabilityServer.forTesting().whileRunning { port in
            try await HTTPTestConnection.withConnection(port: port) { connection in
                for (method, path) in [(HTTPMethod.POST, "/metrics"), (.PUT, "/healthz"), (.DELETE, "/nowhere")] {
                    let response = try await connection.send(method, path, body: "ignored")
                    XCTAssertEqual(response.status, .methodNotAllowed, "\(method) \(path)")
                    XCTAssertEqual(response.header("allow"), "GET, HEAD")
                }
                // The bodies were read and dropped, so the connection still frames requests correctly.
                let afterwards = try await connection.send(.GET, "/healthz")
                XCTAssertEqual(afterwards.status, .ok)
            }
        }
    }

    func testHeadAnswersWithHeadersOnly() async throws {
        try await ObservabilityServer.forTesting().whileRunning { port in
            try await HTTPTestConnection.withConnection(port: port) { connection in
                let head = try await connection.send(.HEAD, "/healthz")
                XCTAssertEqual(head.status, .ok)
                XCTAssertEqual(head.header("content-length"), "3")
                XCTAssertEqual(head.body, "")
                let get = try await connection.send(.GET, "/healthz")
                XCTAssertEqual(get.body, "ok\n")
            }
        }
    }

    func testKeepAliveServesManyRequestsOnOneConnection() async throws {
        try await ObservabilityServer.forTesting().whileRunning { port in
            try await HTTPTestConnection.withConnection(port: port) { connection in
                for _ in 0..<5 {
                    let response = try await connection.send(.GET, "/metrics")
                    XCTAssertEqual(response.status, .ok)
                    XCTAssertNil(response.header("connection"))
                }
            }
        }
    }

    func testConnectionCloseIsHonoured() async throws {
        try await ObservabilityServer.forTesting().whileRunning { port in
            try await HTTPTestConnection.withConnection(port: port) { connection in
                let response = try await connection.send(.GET, "/healthz", headers: [("connection", "close")])
                XCTAssertEqual(response.status, .ok)
                XCTAssertEqual(response.header("connection"), "close")
                let closed = await connection.serverClosed()
                XCTAssertTrue(closed)
            }
        }
    }

    func testHTTP10ClosesAfterTheResponseUnlessAskedToKeepAlive() async throws {
        try await ObservabilityServer.forTesting().whileRunning { port in
            let closing = try await RawHTTPConnection.send("GET /healthz HTTP/1.0\r\n\r\n", port: port)
            XCTAssertTrue(closing.hasPrefix("HTTP/1.0 200 OK\r\n"), closing)
            XCTAssertTrue(closing.lowercased().contains("connection: close\r\n"), closing)
            XCTAssertTrue(closing.hasSuffix("\r\n\r\nok\n"), closing)

            try await HTTPTestConnection.withConnection(port: port) { connection in
                let response = try await connection.send(.GET, "/healthz", headers: [("connection", "keep-alive")])
                XCTAssertEqual(response.header("connection"), nil, "HTTP/1.1 keeps alive without saying so")
            }
        }
    }

    func testABodyAtTheLimitIsReadAndDropped() async throws {
        try await ObservabilityServer.forTesting().whileRunning { port in
            try await HTTPTestConnection.withConnection(port: port) { connection in
                let response = try await connection.send(
                    .POST, "/metrics", body: String(repeating: "x", count: 64 * 1024))
                XCTAssertEqual(response.status, .methodNotAllowed)
                XCTAssertNil(response.header("connection"))
                let afterwards = try await connection.send(.GET, "/healthz")
                XCTAssertEqual(afterwards.status, .ok)
            }
        }
    }

    func testADeclaredBodyOverTheLimitIs413AndCloses() async throws {
        try await ObservabilityServer.forTesting().whileRunning { port in
            // Only the head is sent: the server must refuse on the declared length without waiting for the body.
            let request = "POST /metrics HTTP/1.1\r\nHost: localhost\r\nContent-Length: 65537\r\n\r\n"
            let response = try await RawHTTPConnection.send(request, port: port)
            XCTAssertTrue(response.hasPrefix("HTTP/1.1 413 Payload Too Large\r\n"), response)
            XCTAssertTrue(response.lowercased().contains("connection: close\r\n"), response)
        }
    }

    func testAChunkedBodyOverTheLimitIs413AndCloses() async throws {
        try await ObservabilityServer.forTesting(maxRequestBodyBytes: 16).whileRunning { port in
            // 17 bytes in one chunk, and no final chunk: the server must stop reading at the limit.
            let request =
                "GET /healthz HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "11\r\n" + String(repeating: "x", count: 17) + "\r\n"
            let response = try await RawHTTPConnection.send(request, port: port)
            XCTAssertTrue(response.hasPrefix("HTTP/1.1 413 Payload Too Large\r\n"), response)
        }
    }

    func testMalformedRequestsAre400() async throws {
        try await ObservabilityServer.forTesting().whileRunning { port in
            let response = try await RawHTTPConnection.send("NOT AN HTTP REQUEST\r\n\r\n", port: port)
            XCTAssertTrue(response.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), response)
        }
    }

    func testAFailedBindIsReportedByRunAndByTheListeningAddress() async throws {
        try await ObservabilityServer.forTesting().whileRunning { port in
            let clash = ObservabilityServer(
                configuration: .init(host: "127.0.0.1", port: port),
                registry: PrometheusCollectorRegistry(),
                logger: .init(label: "yedi.observability.test"),
                isServing: { true }
            )
            do {
                try await clash.run()
                XCTFail("a second listener on port \(port) should not bind")
            } catch {}
            do {
                let address = try await clash.listeningAddress
                XCTFail("expected the bind error, got \(address)")
            } catch {}
        }
    }
}
