import Foundation
import RPCTLS
import RPCTestSupport
import XCTest

/// Building a TLSContext: bad deployments must fail at start-up with an error naming the file.
final class TLSContextTests: XCTestCase {
    private var pki: TestPKI!
    private var scratch: URL!

    override func setUpWithError() throws {
        self.pki = try TestPKI.get()
        self.scratch = FileManager.default.temporaryDirectory.appendingPathComponent("yedi-tls-context-\(UUID())")
        try FileManager.default.createDirectory(at: self.scratch, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: self.scratch)
    }

    private func configurationError(_ configuration: TLSConfiguration) -> TLSError? {
        do {
            _ = try TLSContext(configuration: configuration)
            return nil
        } catch {
            return error
        }
    }

    func testValidServerAndClientContextsBuild() throws {
        XCTAssertNoThrow(try TLSContext(configuration: self.pki.serverConfiguration(clientCertificates: .required)))
        XCTAssertNoThrow(try TLSContext(configuration: self.pki.clientConfiguration(identity: "chat")))
        XCTAssertNoThrow(try TLSContext(configuration: .client(trustRootsFile: nil)), "system trust store")
    }

    func testMissingCertificateFileIsNamed() throws {
        let missing = self.scratch.appendingPathComponent("nope.pem").path
        let error = try XCTUnwrap(
            self.configurationError(.server(certificateChainFile: missing, privateKeyFile: self.pki.key("account")))
        )
        XCTAssertEqual(error.kind, .configuration)
        XCTAssertEqual(error.file, missing)
        XCTAssertEqual(error.reason, "cannot read certificate chain file '\(missing)': No such file or directory")
    }

    func testGarbageCertificatePEMIsReported() throws {
        let garbage = self.scratch.appendingPathComponent("garbage.pem")
        try Data("this is not a certificate\n".utf8).write(to: garbage)
        let error = try XCTUnwrap(
            self.configurationError(
                .server(certificateChainFile: garbage.path, privateKeyFile: self.pki.key("account")))
        )
        XCTAssertEqual(error.kind, .configuration)
        XCTAssertEqual(error.file, garbage.path)
        XCTAssertTrue(error.reason.hasPrefix("cannot load certificate chain '\(garbage.path)'"), error.reason)
        XCTAssertTrue(error.reason.contains("no start line"), error.reason)
    }

    func testKeyNotMatchingCertificateIsReported() throws {
        let error = try XCTUnwrap(
            self.configurationError(
                .server(certificateChainFile: self.pki.certificate("account"), privateKeyFile: self.pki.key("chat"))
            )
        )
        XCTAssertEqual(error.kind, .configuration)
        XCTAssertEqual(error.file, self.pki.key("chat"))
        XCTAssertTrue(error.reason.contains("key values mismatch"), error.reason)
    }

    func testMissingTrustRootsFileIsNamed() throws {
        let missing = self.scratch.appendingPathComponent("ca.pem").path
        let error = try XCTUnwrap(self.configurationError(.client(trustRootsFile: missing)))
        XCTAssertEqual(error.file, missing)
        XCTAssertTrue(error.reason.hasPrefix("cannot read trust roots (CA) file"), error.reason)
    }

    func testServerVerifyingClientsNeedsTrustRoots() throws {
        var configuration = self.pki.serverConfiguration(clientCertificates: .required)
        configuration.trustRootsFile = nil
        XCTAssertEqual(self.configurationError(configuration)?.kind, .configuration)
    }

    func testHandlerRoleMustMatchContextRole() throws {
        let server = try TLSContext(configuration: self.pki.serverConfiguration())
        let client = try TLSContext(configuration: self.pki.clientConfiguration())
        XCTAssertThrowsError(try TLSHandler(clientContext: server, serverName: "localhost"))
        XCTAssertThrowsError(try TLSHandler(serverContext: client))
        XCTAssertNoThrow(try TLSHandler(clientContext: client, serverName: "::1"))
    }
}
