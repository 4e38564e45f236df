import Foundation
import NIOCore
import NIOPosix
import RPCTLS
import RPCTestSupport
import XCTest

/// Our handler against Debian's `openssl` CLI, in both directions. Every child process is fed through
/// pipes, waited for with a deadline and killed if it overstays, so no test can hang the suite.
final class TLSOpenSSLInteropTests: TLSLoopbackTestCase {
    private func sClientArguments(port: Int, _ extra: [String] = []) -> [String] {
        [
            "s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", self.pki.caFile, "-servername", "localhost",
            "-verify_return_error",
        ] + extra
    }

    /// Runs s_client against `server`, sends a line, waits for its echo, then closes stdin (s_client then
    /// sends close_notify and exits). Returns everything s_client printed.
    private func sClientEchoSession(server: TLSTestServer, _ extra: [String] = []) throws -> ProcessResult {
        let sClient = try RunningProcess(ProcessRunner.openssl, self.sClientArguments(port: server.port, extra))
        let line = "hello-from-s_client"
        sClient.write(line + "\n")
        let echoed = sClient.waitForOutput(timeout: 10) { $0.components(separatedBy: line).count > 1 }
        sClient.closeInput()
        let result = sClient.finish(timeout: 10)
        XCTAssertTrue(echoed, "no echo from our server:\n\(result.combinedOutput)")
        return result
    }

    func testSClientCompletesATLS13HandshakeWithOurServer() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration())
        )
        defer { server.close() }
        let result = try self.sClientEchoSession(server: server, ["-alpn", "yedi-rpc/1"])
        let output = result.combinedOutput
        XCTAssertTrue(output.contains("New, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256"), output)
        XCTAssertTrue(output.contains("Verify return code: 0 (ok)"), output)
        XCTAssertTrue(output.contains("ALPN protocol: yedi-rpc/1"), output)

        let outcome = try server.connections.outcome(0).wait(timeout: .seconds(10), "server outcome")
        XCTAssertEqual(outcome.handshake?.protocolVersion, .tls13)
        XCTAssertEqual(outcome.tlsErrors, [], "s_client closed with close_notify")
    }

    func testSClientMutualTLSIdentityReachesOurServer() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration(clientCertificates: .required))
        )
        defer { server.close() }
        let result = try self.sClientEchoSession(
            server: server,
            ["-cert", self.pki.certificate("yedi-probe"), "-key", self.pki.key("yedi-probe")]
        )
        XCTAssertTrue(result.combinedOutput.contains("Verify return code: 0 (ok)"), result.combinedOutput)
        let outcome = try server.connections.outcome(0).wait(timeout: .seconds(10), "server outcome")
        XCTAssertEqual(outcome.handshake?.peerIdentity?.commonName, "yedi-probe")
        XCTAssertEqual(outcome.handshake?.peerIdentity?.uris, ["spiffe://yedi/client/yedi-probe"])
    }

    func testSClientWithoutCertificateIsRefusedWhenOneIsRequired() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration(clientCertificates: .required))
        )
        defer { server.close() }
        // TLS 1.3: s_client finishes its side first and only then reads the refusal, so keep its stdin
        // open (EOF would make it hang up first) until the alert shows.
        let sClient = try RunningProcess(ProcessRunner.openssl, self.sClientArguments(port: server.port))
        let refused = sClient.waitForOutput(timeout: 10) { $0.contains("alert certificate required") }
        sClient.closeInput()
        let result = sClient.finish(timeout: 10)
        XCTAssertTrue(refused, result.combinedOutput)
        let outcome = try server.connections.outcome(0).wait(timeout: .seconds(10), "server outcome")
        XCTAssertEqual(outcome.tlsErrors.first?.reason, "peer did not return a certificate")
    }

    func testSClientTLS11IsRefused() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration())
        )
        defer { server.close() }
        // SECLEVEL=0, or OpenSSL 3's s_client won't even offer TLS 1.1 and our server would never see it.
        let result = try ProcessRunner.run(
            ProcessRunner.openssl,
            self.sClientArguments(port: server.port, ["-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"]),
            input: "",
            timeout: 10
        )
        XCTAssertNotEqual(result.exitCode, 0)
        XCTAssertTrue(result.combinedOutput.contains("alert protocol version"), result.combinedOutput)
        let outcome = try server.connections.outcome(0).wait(timeout: .seconds(10), "server outcome")
        XCTAssertNil(outcome.handshake)
        XCTAssertEqual(outcome.tlsErrors.first?.kind, .handshakeFailed)
        XCTAssertEqual(outcome.tlsErrors.first?.reason, "unsupported protocol")
    }

    /// Key exchange: X25519, P-256 and P-384 only. A client offering nothing else (X448, P-521) fails
    /// the handshake. (TLS 1.3: in 1.2 the groups also constrain the certificate's curve.)
    func testKeyExchangeOffersOnlyX25519P256AndP384() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration())
        )
        defer { server.close() }
        var connections = 0
        for group in ["X448", "P-521"] {
            let result = try ProcessRunner.run(
                ProcessRunner.openssl,
                self.sClientArguments(port: server.port, ["-tls1_3", "-groups", group]),
                input: "",
                timeout: 10
            )
            XCTAssertNotEqual(result.exitCode, 0, "\(group):\n\(result.combinedOutput)")
            let outcome = try server.connections.outcome(connections).wait(timeout: .seconds(10), "outcome")
            connections += 1
            XCTAssertNil(outcome.handshake, "\(group) was accepted")
        }
        for group in ["X25519", "P-256", "P-384"] {
            let output = try self.sClientEchoSession(server: server, ["-tls1_3", "-groups", group]).combinedOutput
            XCTAssertTrue(output.contains("Verify return code: 0 (ok)"), "\(group):\n\(output)")
        }
    }

    func testSClientTLS12NegotiatesAnAEADSuite() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration())
        )
        defer { server.close() }
        let result = try self.sClientEchoSession(server: server, ["-tls1_2"])
        XCTAssertTrue(
            result.combinedOutput.contains("New, TLSv1.2, Cipher is ECDHE-ECDSA-AES128-GCM-SHA256"),
            result.combinedOutput
        )
        let outcome = try server.connections.outcome(0).wait(timeout: .seconds(10), "server outcome")
        XCTAssertEqual(outcome.handshake?.protocolVersion, .tls12)
        XCTAssertEqual(outcome.handshake?.cipherSuite, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")
    }

    func testKilledSClientIsReportedAsUncleanShutdown() throws {
        let server = try TLSTestServer.start(
            group: self.group,
            context: TLSContext(configuration: self.pki.serverConfiguration())
        )
        defer { server.close() }
        let sClient = try RunningProcess(ProcessRunner.openssl, self.sClientArguments(port: server.port))
        XCTAssertTrue(sClient.waitForOutput(timeout: 10) { $0.contains("Verify return code: 0 (ok)") })
        sClient.kill()  // SIGKILL: the kernel sends FIN, nobody sends close_notify
        _ = sClient.finish(timeout: 5)
        let outcome = try server.connections.outcome(0).wait(timeout: .seconds(10), "server outcome")
        XCTAssertEqual(outcome.tlsErrors.map(\.kind), [.uncleanShutdown])
    }

    func testOurClientHandshakesAndExchangesBytesWithSServer() throws {
        let sServer = try RunningProcess(
            ProcessRunner.openssl,
            [
                "s_server", "-accept", "127.0.0.1:0", "-naccept", "1", "-rev",
                "-cert", self.pki.certificate("account"), "-key", self.pki.key("account"),
                "-alpn", "yedi-rpc/1", "-verify_return_error", "-Verify", "1", "-CAfile", self.pki.caFile,
            ]
        )
        defer { _ = sServer.finish(timeout: 0) }
        var port: Int?
        XCTAssertTrue(
            sServer.waitForOutput(timeout: 10) { output in
                port = Self.acceptedPort(in: output)
                return port != nil
            },
            "s_server did not start: \(sServer.errorOutput)"
        )
        let serverPort = try XCTUnwrap(port)

        let context = try TLSContext(configuration: self.pki.clientConfiguration(identity: "chat"))
        let client = try self.connectRetrying(port: serverPort, context: context, expecting: 6)
        let info = try client.handshake.wait(timeout: .seconds(10), "handshake with s_server")
        XCTAssertEqual(info.protocolVersion, .tls13)
        XCTAssertEqual(info.applicationProtocol, "yedi-rpc/1")
        XCTAssertEqual(info.peerIdentity?.commonName, "account-service")

        // s_server -rev answers each line reversed.
        try client.channel.writeAndFlush(ByteBuffer(string: "hello\n")).wait(timeout: .seconds(10), "write")
        XCTAssertEqual(try client.received!.wait(timeout: .seconds(10), "reply"), ByteBuffer(string: "olleh\n"))
        _ = try client.close()
        let result = sServer.finish(timeout: 10)
        XCTAssertTrue(result.combinedOutput.contains("CN = chat-service"), "s_server saw our client certificate")
    }

    /// The port from s_server's "ACCEPT 127.0.0.1:PORT" line.
    private static func acceptedPort(in output: String) -> Int? {
        for line in output.split(separator: "\n") where line.hasPrefix("ACCEPT ") {
            if let colon = line.lastIndex(of: ":"), let port = Int(line[line.index(after: colon)...]) {
                return port
            }
        }
        return nil
    }

    /// s_server prints ACCEPT once bound, but be robust anyway: retry refused connects for a few seconds.
    private func connectRetrying(port: Int, context: TLSContext, expecting: Int) throws -> TestClient {
        let deadline = Date().addingTimeInterval(10)
        while true {
            do {
                return try TestClient.connect(group: self.group, port: port, context: context, expecting: expecting)
            } catch  where Date() < deadline {
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
    }
}
