import Foundation
import HTTPTestSupport
import OutsideSenders
import ServiceRuntime
import XCTest

/// Test fixtures, clearly not real credentials: each test checks that its secret never reaches a log line
/// or an error's description.
enum FixtureSecrets {
    static let sendGridKey = "TEST-FIXTURE-NOT-A-REAL-sendgrid-key"
    static let nhnSecretKey = "TEST-FIXTURE-NOT-A-REAL-nhn-secret"
    static let fcmAccessToken = "TEST-FIXTURE-NOT-A-REAL-fcm-token"
}

/// Short enough that the timeout tests end quickly; the fake server never answers those, so the timeout is
/// the only way out (nothing waits on a sleep).
let shortTimeout = ProviderHTTPSettings(timeout: .milliseconds(300))

extension XCTestCase {
    /// Runs `body` against a fake server giving every request `reply`, and stops the server after it.
    func withFakeServer<T>(
        replying reply: FakeHTTPServer.Reply, _ body: (FakeHTTPServer) async throws -> T
    ) async throws -> T {
        try await withFakeServer(answering: { _ in reply }, body)
    }

    /// Runs `body` against a fake server answering each request with `answer(request)`, and stops it after.
    func withFakeServer<T>(
        answering answer: @escaping @Sendable (FakeHTTPServer.Request) -> FakeHTTPServer.Reply,
        _ body: (FakeHTTPServer) async throws -> T
    ) async throws -> T {
        let server = try await FakeHTTPServer(reply: answer)
        do {
            let result = try await body(server)
            try await server.stop()
            return result
        } catch {
            try? await server.stop()
            throw error
        }
    }

    /// The error `operation` throws, failing the test when it throws none.
    func thrownError(
        _ operation: () async throws -> Void, file: StaticString = #filePath, line: UInt = #line
    ) async -> (any Error)? {
        do {
            try await operation()
            XCTFail("expected an error", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    /// The request body as a JSON object.
    func json(_ request: FakeHTTPServer.Request?, file: StaticString = #filePath, line: UInt = #line) throws
        -> [String: Any]
    {
        let request = try XCTUnwrap(request, "no request reached the server", file: file, line: line)
        return try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any], request.bodyText, file: file,
            line: line)
    }
}
