import Foundation
import RPCTestSupport
import XCTest
import YediCrypto

/// Keys and signatures cross between this module and the `openssl` CLI in both directions.
final class OpenSSLInteropTests: XCTestCase {
    private func openssl(_ arguments: [String]) throws -> ProcessResult {
        guard FileManager.default.isExecutableFile(atPath: ProcessRunner.openssl) else {
            throw XCTSkip("no openssl CLI at \(ProcessRunner.openssl)")
        }
        return try ProcessRunner.run(ProcessRunner.openssl, arguments, timeout: 30)
    }

    func testCLIKeyLoadsAndItsSignatureVerifiesWithTheCLI() throws {
        let directory = try TemporaryDirectory()
        let keyFile = directory.path("key.pem")
        let publicFile = directory.path("public.pem")
        try openssl(["genpkey", "-algorithm", "ED25519", "-out", keyFile]).requireSuccess()
        try openssl(["pkey", "-in", keyFile, "-pubout", "-out", publicFile]).requireSuccess()

        let key = try Ed25519PrivateKey(pemRepresentation: String(contentsOfFile: keyFile, encoding: .utf8))
        let publicKey = try Ed25519PublicKey(pemRepresentation: String(contentsOfFile: publicFile, encoding: .utf8))
        XCTAssertEqual(key.publicKey, publicKey, "the CLI's public key is the one derived here")
        XCTAssertEqual(key.pemRepresentation, try String(contentsOfFile: keyFile, encoding: .utf8))
        XCTAssertEqual(publicKey.pemRepresentation, try String(contentsOfFile: publicFile, encoding: .utf8))

        let message = Array("signed in Swift, checked by openssl".utf8)
        let signature = try key.signature(for: message)
        try Data(message).write(to: URL(fileURLWithPath: directory.path("message")))
        try Data(signature).write(to: URL(fileURLWithPath: directory.path("signature")))
        let verified = try openssl([
            "pkeyutl", "-verify", "-pubin", "-inkey", publicFile, "-rawin",
            "-in", directory.path("message"), "-sigfile", directory.path("signature"),
        ])
        XCTAssertEqual(verified.exitCode, 0, verified.combinedOutput)
        XCTAssertTrue(verified.output.contains("Signature Verified Successfully"), verified.combinedOutput)

        // The CLI must be able to say no, or the check above proves nothing.
        var tampered = signature
        tampered[10] ^= 0x40
        try Data(tampered).write(to: URL(fileURLWithPath: directory.path("tampered")))
        let rejected = try openssl([
            "pkeyutl", "-verify", "-pubin", "-inkey", publicFile, "-rawin",
            "-in", directory.path("message"), "-sigfile", directory.path("tampered"),
        ])
        XCTAssertNotEqual(rejected.exitCode, 0, rejected.combinedOutput)
    }

    func testCLISignatureVerifiesHere() throws {
        let directory = try TemporaryDirectory()
        let key = Ed25519PrivateKey.generate()
        let keyFile = directory.path("key.pem")
        try key.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let message = Array("signed by openssl, checked in Swift".utf8)
        try Data(message).write(to: URL(fileURLWithPath: directory.path("message")))
        try openssl([
            "pkeyutl", "-sign", "-inkey", keyFile, "-rawin",
            "-in", directory.path("message"), "-out", directory.path("signature"),
        ]).requireSuccess()
        let signature = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.path("signature"))))
        XCTAssertEqual(signature.count, 64)
        XCTAssertTrue(key.publicKey.isValidSignature(signature, for: message))
        XCTAssertFalse(key.publicKey.isValidSignature(signature, for: message + [0x21]))
    }
}
