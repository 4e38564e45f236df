import NIOCore
import NIOPosix
import RPCTLS
import RPCTestSupport
import XCTest

/// Certificates that must be refused, and the errors each side reports.
final class TLSVerificationTests: TLSLoopbackTestCase {
    /// Connects with `client` to a server built from `server` and returns both sides' outcomes.
    private func attempt(
        server serverConfiguration: TLSConfiguration,
        client clientConfiguration: TLSConfiguration,
        serverName: String = "localhost"
    ) throws -> (client: ConnectionOutcome, server: ConnectionOutcome) {
        let server = try TLSTestServer.start(group: self.group, context: TLSContext(configuration: serverConfiguration))
        defer { server.close() }
        let client = try TestClient.connect(
            group: self.group,
            port: server.port,
            context: TLSContext(configuration: clientConfiguration),
            serverName: serverName
        )
        let clientOutcome = try client.closed.wait(timeout: .seconds(10), "client rejected")
        let serverOutcome = try server.connections.outcome(0).wait(timeout: .seconds(10), "server outcome")
        return (clientOutcome, serverOutcome)
    }

    func testWrongCAFailsWithUnableToGetLocalIssuer() throws {
        let outcome = try self.attempt(
            server: self.pki.serverConfiguration(),
            client: self.pki.clientConfiguration(trustRoots: self.pki.otherCAFile)
        )
        XCTAssertNil(outcome.client.handshake)
        let error = try XCTUnwrap(outcome.client.tlsErrors.first, "\(outcome.client.errors)")
        XCTAssertEqual(error.kind, .certificateVerificationFailed)
        XCTAssertEqual(error.reason, "certificate verify failed: unable to get local issuer certificate")
        XCTAssertTrue(
            error.openSSLErrors.contains { $0.contains("certificate verify failed") }, "\(error.openSSLErrors)")
        // The client's alert tells the server why.
        XCTAssertTrue(
            outcome.server.tlsErrors.contains { $0.reason.contains("unknown ca") }, "\(outcome.server.errors)")
    }

    func testHostNameMismatchFails() throws {
        let outcome = try self.attempt(
            server: self.pki.serverConfiguration("account"),
            client: self.pki.clientConfiguration(),
            serverName: "chat-service"
        )
        let error = try XCTUnwrap(outcome.client.tlsErrors.first, "\(outcome.client.errors)")
        XCTAssertEqual(error.kind, .certificateVerificationFailed)
        XCTAssertEqual(error.reason, "certificate verify failed: hostname mismatch")
    }

    func testExpiredServerCertificateIsRejected() throws {
        let server = TLSConfiguration.server(
            certificateChainFile: self.pki.expiredCertificate,
            privateKeyFile: self.pki.expiredKey
        )
        let outcome = try self.attempt(server: server, client: self.pki.clientConfiguration())
        let error = try XCTUnwrap(outcome.client.tlsErrors.first, "\(outcome.client.errors)")
        XCTAssertEqual(error.kind, .certificateVerificationFailed)
        XCTAssertEqual(error.reason, "certificate verify failed: certificate has expired")
    }

    func testExpiredClientCertificateIsRejectedByTheServer() throws {
        let client = TLSConfiguration.client(
            trustRootsFile: self.pki.caFile,
            certificateChainFile: self.pki.expiredCertificate,
            privateKeyFile: self.pki.expiredKey
        )
        let outcome = try self.attempt(
            server: self.pki.serverConfiguration(clientCertificates: .required), client: client)
        let error = try XCTUnwrap(outcome.server.tlsErrors.first, "\(outcome.server.errors)")
        XCTAssertEqual(error.kind, .certificateVerificationFailed)
        XCTAssertEqual(error.reason, "certificate verify failed: certificate has expired")
        XCTAssertNil(outcome.server.handshake)
        XCTAssertTrue(
            outcome.client.tlsErrors.contains { $0.reason.contains("certificate expired") }, "\(outcome.client.errors)")
    }

    func testServerRequiringClientCertificateRejectsClientWithout() throws {
        let outcome = try self.attempt(
            server: self.pki.serverConfiguration(clientCertificates: .required),
            client: self.pki.clientConfiguration()
        )
        XCTAssertNil(outcome.server.handshake, "the server never completes the handshake")
        let serverError = try XCTUnwrap(outcome.server.tlsErrors.first, "\(outcome.server.errors)")
        XCTAssertEqual(serverError.kind, .handshakeFailed)
        XCTAssertEqual(serverError.reason, "peer did not return a certificate")
        // In TLS 1.3 the client finishes its side before the server judges its (empty) certificate,
        // so it learns of the refusal from the alert that follows.
        XCTAssertTrue(
            outcome.client.tlsErrors.contains { $0.reason.contains("certificate required") },
            "\(outcome.client.errors)"
        )
    }

    func testClientCertificateFromUnknownCAIsRejected() throws {
        let otherPKIClient = TLSConfiguration.client(
            trustRootsFile: self.pki.caFile,
            certificateChainFile: self.pki.otherPKI.appendingPathComponent("yedi-probe.pem").path,
            privateKeyFile: self.pki.otherPKI.appendingPathComponent("yedi-probe.key").path
        )
        let outcome = try self.attempt(
            server: self.pki.serverConfiguration(clientCertificates: .optional),
            client: otherPKIClient
        )
        let error = try XCTUnwrap(outcome.server.tlsErrors.first, "\(outcome.server.errors)")
        XCTAssertEqual(error.kind, .certificateVerificationFailed)
        XCTAssertEqual(error.reason, "certificate verify failed: unable to get local issuer certificate")
    }

    func testClientOnlyCertificateCannotServe() throws {
        // yedi-probe's EKU is clientAuth only: a client must not accept it as a server.
        let outcome = try self.attempt(
            server: self.pki.serverConfiguration("yedi-probe"), client: self.pki.clientConfiguration())
        let error = try XCTUnwrap(outcome.client.tlsErrors.first, "\(outcome.client.errors)")
        XCTAssertEqual(error.kind, .certificateVerificationFailed)
        XCTAssertEqual(error.reason, "certificate verify failed: unsuitable certificate purpose")
    }
}
