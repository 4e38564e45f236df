import Foundation
import PostgresNIO
import PostgresTestSupport
import RPCTestSupport
import ServiceRuntime
import XCTest

/// `ServicePostgres` over TCP with TLS and full verification (`sslmode=verify-full`, `--database-ca`),
/// against a cluster of the test's own whose certificate comes from the test PKI
/// (`deploy/postgres-dev.sh --tls`; the shared test server is socket only).
final class PostgresTLSTests: XCTestCase {
    private func settings(_ cluster: TestPostgres.TLSCluster, ca: String) -> PostgresSettings {
        PostgresSettings(
            address: .tcp(host: "localhost", port: cluster.port), role: "yedi_test", database: "postgres",
            passwordFile: cluster.passwordFile, tls: .verifyFull, caFile: ca, poolSize: 2, timeout: .seconds(5),
            connectTimeout: .seconds(10))
    }

    func testFullVerificationConnectsAndAServerCertificateOfAnotherCAIsRefusedAtOnce() async throws {
        _ = try TestPostgres.require()
        let pki = try TestPKI.get()
        // The account service's certificate: DNS:localhost and IP:127.0.0.1, signed by the test CA.
        let cluster = try TestPostgres.startTLSCluster(certificate: pki.certificate("account"), key: pki.key("account"))
        defer { cluster.stop() }

        // The CA that signed the server's certificate: connects, and the session is encrypted.
        let trusted = try ServicePostgres(settings: settings(cluster, ca: pki.caFile), logger: TestPostgres.logger)
        try await trusted.waitUntilReachable()
        let runner = Task { await trusted.run() }
        let encrypted = try await trusted.read { connection in
            try await connection.query(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: TestPostgres.logger
            ).collect().first?.decode(Bool.self)
        }
        runner.cancel()
        await runner.value
        XCTAssertEqual(encrypted, true)

        // Another CA: refused at once (a retry cannot fix it), in one line naming the address.
        let other = try ServicePostgres(settings: settings(cluster, ca: pki.otherCAFile), logger: TestPostgres.logger)
        let started = ContinuousClock.now
        do {
            try await other.waitUntilReachable()
            XCTFail("connected although another CA signed the server's certificate")
        } catch let error as StartupError {
            let line = "\(error)"
            XCTAssertTrue(line.contains("PostgreSQL yedi_test@localhost:\(cluster.port)/postgres"), line)
            XCTAssertFalse(line.contains("\n"), "one line: \(line)")
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5), "refused at once, not after the connect timeout")
    }
}
