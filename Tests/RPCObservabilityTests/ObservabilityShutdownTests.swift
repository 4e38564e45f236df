import RPCObservability
import ServiceLifecycle
import ServiceLifecycleTestKit
import XCTest

/// The server as a `Service`: graceful shutdown and cancellation close the listener and the connections.
final class ObservabilityShutdownTests: XCTestCase {
    func testGracefulShutdownClosesTheListenerAndIdleConnections() async throws {
        let server = ObservabilityServer.forTesting()
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run() }
                let port = try await server.port
                try await HTTPTestConnection.withConnection(port: port) { connection in
                    let response = try await connection.send(.GET, "/healthz")
                    XCTAssertEqual(response.status, .ok)

                    trigger.triggerGracefulShutdown()
                    let closed = await connection.serverClosed()
                    XCTAssertTrue(closed, "an idle keep-alive connection is closed on shutdown")
                }
                try await group.waitForAll()  // run() returns by itself, without cancellation
                let refused = await RawHTTPConnection.isRefused(port: port)
                XCTAssertTrue(refused, "nothing listens on \(port) after shutdown")
            }
        }
    }

    func testGracefulShutdownLetsTheRequestInProgressFinish() async throws {
        let server = ObservabilityServer.forTesting()
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run() }
                let port = try await server.port
                try await RawHTTPConnection.withConnection(port: port) { connection in
                    // Pipelined: NIO hands the server the POST's head as it finishes the GET's response, so once
                    // that response is here, the server is known to be in the middle of the POST.
                    try await connection.write(
                        "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
                            + "POST /metrics HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\n12345"
                    )
                    let first = try await connection.read(through: "\r\n\r\nok\n")
                    XCTAssertTrue(first.hasPrefix("HTTP/1.1 200 OK\r\n"), first)

                    trigger.triggerGracefulShutdown()
                    while !(await RawHTTPConnection.isRefused(port: port)) {
                        await Task.yield()  // until the listener is closed: shutdown has begun
                    }
                    try await connection.write("67890")
                    // The whole response, then the server's close (readToEnd returns at EOF). Whether the
                    // response also says `connection: close` depends on whether the connection heard of the
                    // shutdown before it answered: the listener closes first, on its own loop.
                    let second = try await connection.readToEnd()
                    XCTAssertTrue(second.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n"), second)
                    XCTAssertTrue(second.hasSuffix("method not allowed\n"), second)
                }
                try await group.waitForAll()
            }
        }
    }

    func testCancellationClosesTheListenerAndConnections() async throws {
        let server = ObservabilityServer.forTesting()
        let running = Task { try await server.run() }
        let port = try await server.port
        try await HTTPTestConnection.withConnection(port: port) { connection in
            let response = try await connection.send(.GET, "/healthz")
            XCTAssertEqual(response.status, .ok)
            try await connection.sendHead(.POST, "/metrics", contentLength: 10)
            running.cancel()
            let closed = await connection.serverClosed()
            XCTAssertTrue(closed, "cancellation does not wait for a request in progress")
        }
        try await running.value
        let refused = await RawHTTPConnection.isRefused(port: port)
        XCTAssertTrue(refused)
    }

    func testListeningAddressWaitsForTheBind() async throws {
        let server = ObservabilityServer.forTesting()
        let waiting = Task { try await server.listeningAddress }  // asks before run() has bound
        try await server.whileRunning { port in
            let bound = try await waiting.value
            XCTAssertEqual(bound.port, port)
            XCTAssertEqual(bound.ipAddress, "127.0.0.1")
        }
    }

    func testWaitingForTheAddressCanBeCancelled() async throws {
        let server = ObservabilityServer.forTesting()  // never run
        let waiting = Task { try await server.listeningAddress }
        waiting.cancel()
        do {
            let address = try await waiting.value
            XCTFail("expected cancellation, got \(address)")
        } catch is CancellationError {}
    }
}
