import AccessTokens
import Foundation
import RPCCore
import RPCTestSupport
import XCTest
import YediCrypto

/// `yedi-probe token`: the printed token verifies with the shared verifier and the key it was given.
final class ProbeTokenTests: XCTestCase {
    private var directory: URL!
    private var keyFile = ""
    private var signingKey: TokenSigningKey!

    override func setUp() async throws {
        _ = try ProbeExecutable.require()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("probe-token-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        signingKey = TokenSigningKey(privateKey: .generate())
        keyFile = directory.appendingPathComponent("token-signing.key").path
        try signingKey.privateKey.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
    }

    override func tearDown() async throws {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    func testPrintsATokenTheVerifierAccepts() throws {
        let before = Date()
        let result = try probe(["token", "--user", "u-5", "--role", "designer", "--key", keyFile, "--session", "s-3"])
        assertExit(result, 0)
        XCTAssertEqual(result.errorOutput, "")
        let token = result.output.trimmingCharacters(in: .newlines)
        XCTAssertEqual(result.output, token + "\n", "one line: the token")

        let claims = try JWTVerifier(keys: [signingKey.verificationKey]).claims(of: token)
        XCTAssertEqual(claims.userID, "u-5")
        XCTAssertEqual(claims.role, .designer)
        XCTAssertEqual(claims.sessionID, "s-3")
        XCTAssertEqual(claims.expiresAt.timeIntervalSince(claims.issuedAt), 900, "the default lifetime")
        XCTAssertGreaterThanOrEqual(claims.issuedAt, before.addingTimeInterval(-1))

        // Another key's verifier refuses it: the token really is signed with --key.
        let other = JWTVerifier(keys: [TokenSigningKey(privateKey: .generate()).verificationKey])
        XCTAssertThrowsError(try other.claims(of: token))
    }

    func testTTL() throws {
        let result = try probe(["token", "--user", "u-1", "--role", "customer", "--key", keyFile, "--ttl", "60"])
        assertExit(result, 0)
        let claims = try JWTVerifier(keys: [signingKey.verificationKey])
            .claims(of: result.output.trimmingCharacters(in: .newlines))
        XCTAssertEqual(claims.expiresAt.timeIntervalSince(claims.issuedAt), 60)
        XCTAssertEqual(claims.role, .customer)
        XCTAssertNil(claims.sessionID)
    }

    /// Tenant: `--app` mints a token of another app, which a verifier serving that app accepts and
    /// YeDi's refuses.
    func testTenantAppAndRoleOfAnotherApp() throws {
        let result = try probe(["token", "--user", "u-2", "--app", "slp", "--role", "member", "--key", keyFile])
        assertExit(result, 0)
        let token = result.output.trimmingCharacters(in: .newlines)
        let slp = JWTVerifier(keys: [signingKey.verificationKey], apps: ["slp": ["member"]])
        let claims = try slp.claims(of: token)
        XCTAssertEqual(claims.app, "slp")
        XCTAssertEqual(claims.role, "member")
        XCTAssertThrowsError(try JWTVerifier(keys: [signingKey.verificationKey]).claims(of: token))
        let badApp = try probe(["token", "--user", "u-2", "--app", "SLP!", "--role", "member", "--key", keyFile])
        assertExit(badApp, 2)
        XCTAssertTrue(badApp.errorOutput.contains("--app"), badApp.errorOutput)
    }

    func testBadRoleIsAUsageError() throws {
        let result = try probe(["token", "--user", "u-1", "--role", "admin", "--key", keyFile])
        assertExit(result, 2)
        XCTAssertEqual(result.output, "")
        XCTAssertTrue(result.errorOutput.contains("admin"), result.errorOutput)
        XCTAssertTrue(result.errorOutput.contains("customer"), result.errorOutput)
        let badTTL = try probe(["token", "--user", "u-1", "--role", "customer", "--key", keyFile, "--ttl", "0"])
        assertExit(badTTL, 2)
    }

    func testMissingOrWrongKeyFile() throws {
        let missing = directory.appendingPathComponent("nope.key").path
        assertFailure(
            try probe(["token", "--user", "u-1", "--role", "customer", "--key", missing]),
            exit: 8,
            contains: ["token signing key", missing, "no such file"]
        )
        let publicFile = directory.appendingPathComponent("public.pem").path
        try signingKey.privateKey.publicKey.pemRepresentation.write(
            toFile: publicFile, atomically: true, encoding: .utf8)
        assertFailure(
            try probe(["token", "--user", "u-1", "--role", "customer", "--key", publicFile]),
            exit: 8,
            contains: ["not an Ed25519 private key"]
        )
    }
}
