import NIOCore
import NIOPosix
import RPCTLS
import RPCTestSupport
import XCTest

/// Handshakes over real loopback sockets, and what they tell each side.
final class TLSHandshakeTests: TLSLoopbackTestCase {
    func testHandshakeAndEchoRoundTrip() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration())
        )
        defer { server.close() }
        let message = ByteBuffer(string: "hello, yedi")
        let client = try TestClient.connect(
            group: self.group,
            port: server.port,
            context: TLSContext(configuration: self.pki.clientConfiguration()),
            expecting: message.readableBytes
        )

        let info = try client.handshake.wait(timeout: .seconds(10), "handshake")
        XCTAssertEqual(info.protocolVersion, .tls13)
        XCTAssertEqual(info.cipherSuite, "TLS_AES_128_GCM_SHA256")
        XCTAssertEqual(info.applicationProtocol, "yedi-rpc/1")
        XCTAssertEqual(info.peerIdentity?.commonName, "account-service", "the client sees the server's identity")

        try client.channel.writeAndFlush(message).wait(timeout: .seconds(10), "write")
        XCTAssertEqual(try client.received!.wait(timeout: .seconds(10), "echo"), message)

        let clientOutcome = try client.close()
        XCTAssertEqual(clientOutcome.errors.count, 0, "clean close: \(clientOutcome.errors)")
        let serverOutcome = try server.connections.outcome(0).wait(timeout: .seconds(10), "server outcome")
        XCTAssertEqual(
            serverOutcome.errors.count, 0, "close_notify answered, no unclean shutdown: \(serverOutcome.errors)")
        XCTAssertNil(serverOutcome.handshake?.peerIdentity, "no client certificate was asked for")
    }

    func testHandlerExposesHandshakeInfoAndPeerIdentity() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration("content"))
        )
        defer { server.close() }
        let client = try TestClient.connect(
            group: self.group,
            port: server.port,
            context: TLSContext(configuration: self.pki.clientConfiguration())
        )
        let info = try client.handshake.wait(timeout: .seconds(10), "handshake")
        let fromHandler = try client.channel.eventLoop.submit {
            let handler = try client.channel.pipeline.syncOperations.handler(type: TLSHandler.self)
            return handler.handshakeInfo
        }.wait(timeout: .seconds(10), "handler lookup")
        XCTAssertEqual(fromHandler, info)
        XCTAssertEqual(fromHandler?.peerIdentity?.uris, ["spiffe://yedi/service/content"])
        _ = try client.close()
    }

    func testMutualTLSPeerIdentityReachesTheServer() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration(clientCertificates: .required))
        )
        defer { server.close() }
        let client = try TestClient.connect(
            group: self.group,
            port: server.port,
            context: TLSContext(configuration: self.pki.clientConfiguration(identity: "booking")),
            expecting: 4
        )
        _ = try client.handshake.wait(timeout: .seconds(10), "handshake")
        // TLS 1.3 clients finish first; a round trip proves the server accepted the certificate.
        try client.channel.writeAndFlush(ByteBuffer(string: "ping")).wait(timeout: .seconds(10), "write")
        _ = try client.received!.wait(timeout: .seconds(10), "echo")
        _ = try client.close()

        let outcome = try server.connections.outcome(0).wait(timeout: .seconds(10), "server outcome")
        let identity = try XCTUnwrap(outcome.handshake?.peerIdentity)
        XCTAssertEqual(identity.commonName, "booking-service")
        XCTAssertEqual(identity.dnsNames, ["booking-service", "localhost"])
        XCTAssertEqual(identity.uris, ["spiffe://yedi/service/booking"])
        XCTAssertEqual(outcome.errors.count, 0, "\(outcome.errors)")
    }

    func testOptionalClientCertificateAcceptsClientsWithAndWithoutOne() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration(clientCertificates: .optional))
        )
        defer { server.close() }
        for identity in [nil, "yedi-probe"] {
            let client = try TestClient.connect(
                group: self.group,
                port: server.port,
                context: TLSContext(configuration: self.pki.clientConfiguration(identity: identity)),
                expecting: 2
            )
            try client.channel.writeAndFlush(ByteBuffer(string: "hi")).wait(timeout: .seconds(10), "write")
            _ = try client.received!.wait(timeout: .seconds(10), "echo")
            _ = try client.close()
        }
        let anonymous = try server.connections.outcome(0).wait(timeout: .seconds(10), "outcome 0")
        let probe = try server.connections.outcome(1).wait(timeout: .seconds(10), "outcome 1")
        XCTAssertNotNil(anonymous.handshake)
        XCTAssertNil(anonymous.handshake?.peerIdentity)
        XCTAssertEqual(
            probe.handshake?.peerIdentity,
            PeerIdentity(commonName: "yedi-probe", dnsNames: [], uris: ["spiffe://yedi/client/yedi-probe"])
        )
    }

    func testIPAddressServerNameIsVerifiedAgainstIPSubjectAltName() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration())
        )
        defer { server.close() }
        let clientContext = try TLSContext(configuration: self.pki.clientConfiguration())

        let byIP = try TestClient.connect(
            group: self.group, port: server.port, context: clientContext, serverName: "127.0.0.1")
        XCTAssertEqual(try byIP.handshake.wait(timeout: .seconds(10), "handshake").protocolVersion, .tls13)
        _ = try byIP.close()

        let wrongIP = try TestClient.connect(
            group: self.group, port: server.port, context: clientContext, serverName: "127.0.0.2")
        let outcome = try wrongIP.closed.wait(timeout: .seconds(10), "rejected")
        let error = try XCTUnwrap(outcome.tlsErrors.first)
        XCTAssertEqual(error.kind, .certificateVerificationFailed)
        XCTAssertEqual(error.reason, "certificate verify failed: IP address mismatch")
    }

    func testALPNMismatchIsRefusedWithNoApplicationProtocol() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration())
        )
        defer { server.close() }
        var configuration = self.pki.clientConfiguration()
        configuration.applicationProtocols = ["h2", "http/1.1"]
        let client = try TestClient.connect(
            group: self.group,
            port: server.port,
            context: TLSContext(configuration: configuration)
        )
        let outcome = try client.closed.wait(timeout: .seconds(10), "refused")
        XCTAssertNil(outcome.handshake)
        let error = try XCTUnwrap(outcome.tlsErrors.first)
        XCTAssertEqual(error.kind, .handshakeFailed)
        XCTAssertTrue(error.reason.contains("no application protocol"), error.reason)

        let serverOutcome = try server.connections.outcome(0).wait(timeout: .seconds(10), "server outcome")
        XCTAssertTrue(
            serverOutcome.tlsErrors.contains { $0.reason.contains("no application protocol") },
            "\(serverOutcome.errors)"
        )
    }

    func testClientOfferingNoALPNIsAccepted() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration())
        )
        defer { server.close() }
        var configuration = self.pki.clientConfiguration()
        configuration.applicationProtocols = []
        let client = try TestClient.connect(
            group: self.group,
            port: server.port,
            context: TLSContext(configuration: configuration),
            expecting: 2
        )
        let info = try client.handshake.wait(timeout: .seconds(10), "handshake")
        XCTAssertNil(info.applicationProtocol)
        try client.channel.writeAndFlush(ByteBuffer(string: "ok")).wait(timeout: .seconds(10), "write")
        _ = try client.received!.wait(timeout: .seconds(10), "echo")
        _ = try client.close()
    }
}
