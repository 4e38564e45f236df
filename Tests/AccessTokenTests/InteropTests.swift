import AccessTokens
import Foundation
import RPCTestSupport
import XCTest
import YediCrypto

/// Tokens this library did not make verify: JSON written another way, and a signature from the `openssl` CLI.
final class InteropTests: XCTestCase {
    func testTokenSignedByTheOpenSSLCLIVerifies() throws {
        guard FileManager.default.isExecutableFile(atPath: ProcessRunner.openssl) else {
            throw XCTSkip("no openssl CLI")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("key.pem").path
        try ProcessRunner.run(
            ProcessRunner.openssl, ["genpkey", "-algorithm", "ED25519", "-out", keyFile], timeout: 30
        )
        .requireSuccess()
        let key = try TokenVerificationKey.load(pemFile: keyFile)

        // Another writer's JSON: other key order, spaces, escaped slash, extra claims, a nested object.
        let now = 1_750_000_000
        let header = #"{ "kid": "\#(key.keyID)", "typ": "JWT", "alg": "EdDSA" }"#
        let claims = #"""
            {"exp": \#(now + 300), "iat": \#(now), "sub": "u\/9", "role": "designer", "sid": "s-1",
             "iss": "yedi-account", "aud": "yedi", "app": "yedi", "jti": "x", "extra": {"nested": [1, 2]}}
            """#
        let input = HandMadeToken.part(header) + "." + HandMadeToken.part(claims)
        let inputFile = directory.appendingPathComponent("input").path
        let signatureFile = directory.appendingPathComponent("signature").path
        try Data(input.utf8).write(to: URL(fileURLWithPath: inputFile))
        try ProcessRunner.run(
            ProcessRunner.openssl,
            ["pkeyutl", "-sign", "-inkey", keyFile, "-rawin", "-in", inputFile, "-out", signatureFile],
            timeout: 30
        ).requireSuccess()
        let signature = try [UInt8](Data(contentsOf: URL(fileURLWithPath: signatureFile)))
        let token = input + "." + Base64URL.encode(signature)

        let verifier = JWTVerifier(keys: [key], now: { Date(timeIntervalSince1970: TimeInterval(now + 60)) })
        let verified = try verifier.claims(of: token)
        XCTAssertEqual(verified.userID, "u/9")
        XCTAssertEqual(verified.role, .designer)
        XCTAssertEqual(verified.sessionID, "s-1")
        XCTAssertEqual(verified.app, .yedi)
        XCTAssertEqual(verified.expiresAt, Date(timeIntervalSince1970: TimeInterval(now + 300)))
        // And this library's signature over the same input is the CLI's (Ed25519 is deterministic).
        let signingKey = try TokenSigningKey.load(pemFile: keyFile)
        XCTAssertEqual(try signingKey.privateKey.signature(for: Array(input.utf8)), signature)
    }
}
