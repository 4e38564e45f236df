import AccessTokens
import Foundation
import RPCAccess
import RPCCore
import XCTest
import YediCrypto

final class AccessTokenRoundTripTests: XCTestCase {
    private let signingKey = TokenSigningKey(privateKey: .generate())
    private let clock = TestClock()

    func testIssuedTokenVerifies() async throws {
        let issuer = AccessTokenIssuer(signingKey: signingKey, now: clock.function)
        let verifier = JWTVerifier(
            keys: [signingKey.verificationKey], apps: ["yedi-nails": [.designer]], now: clock.function)
        let (token, issued) = try issuer.issue(userID: "u-42", role: .designer, sessionID: "s-7", app: "yedi-nails")
        XCTAssertEqual(token.split(separator: ".").count, 3)
        let claims = try verifier.claims(of: token)
        XCTAssertEqual(claims, issued)
        XCTAssertEqual(claims.userID, "u-42")
        XCTAssertEqual(claims.role, .designer)
        XCTAssertEqual(claims.sessionID, "s-7")
        XCTAssertEqual(claims.app, "yedi-nails")
        XCTAssertEqual(claims.issuedAt, clock.now)
        XCTAssertEqual(claims.expiresAt, clock.now.addingTimeInterval(15 * 60))
        let caller = try await verifier.verify(accessToken: token)
        XCTAssertEqual(
            caller,
            .user(AuthenticatedUser(id: "u-42", role: .designer, sessionID: "s-7", app: "yedi-nails"))
        )
    }

    func testHeaderAndClaimsAreStandardJWT() throws {
        let issuer = AccessTokenIssuer(signingKey: signingKey, lifetime: .seconds(60), now: clock.function)
        let (token, _) = try issuer.issue(userID: "u-\"quoted\"\n", role: .customer, sessionID: nil)
        let parts = token.split(separator: ".").map(String.init)
        let header = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(XCTUnwrap(Base64URL.decode(parts[0])))) as? [String: Any])
        XCTAssertEqual(header["alg"] as? String, "EdDSA")
        XCTAssertEqual(header["typ"] as? String, "JWT")
        XCTAssertEqual(header["kid"] as? String, signingKey.keyID)
        let claims = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(XCTUnwrap(Base64URL.decode(parts[1])))) as? [String: Any])
        XCTAssertEqual(claims["iss"] as? String, "yedi-account")
        XCTAssertEqual(claims["sub"] as? String, "u-\"quoted\"\n")
        XCTAssertEqual(claims["role"] as? String, "customer")
        XCTAssertNil(claims["sid"])
        XCTAssertEqual(claims["app"] as? String, "yedi", "every token names its app")
        XCTAssertEqual(claims["aud"] as? String, "yedi")
        XCTAssertEqual((claims["iat"] as? NSNumber)?.int64Value, Int64(clock.now.timeIntervalSince1970))
        XCTAssertEqual((claims["exp"] as? NSNumber)?.int64Value, Int64(clock.now.timeIntervalSince1970) + 60)
        // The signature is Ed25519 over the first two parts.
        XCTAssertTrue(
            signingKey.privateKey.publicKey.isValidSignature(
                try XCTUnwrap(Base64URL.decode(parts[2])),
                for: Array("\(parts[0]).\(parts[1])".utf8)
            )
        )
    }

    func testKeyIDIsDerivedFromThePublicKey() throws {
        // RFC 8032 TEST 1's key: base64url(SHA-256(public key)[0..<12]) computed independently.
        let rfcKey = try Ed25519PrivateKey(
            rawRepresentation: [
                0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c, 0xc4,
                0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60,
            ])
        XCTAssertEqual(TokenSigningKey(privateKey: rfcKey).keyID, "If4x36FUomFia_hU")
        XCTAssertEqual(TokenVerificationKey(publicKey: rfcKey.publicKey).keyID, "If4x36FUomFia_hU")
        XCTAssertNotEqual(TokenSigningKey(privateKey: .generate()).keyID, signingKey.keyID)
        XCTAssertEqual(signingKey.verificationKey.keyID, signingKey.keyID)
    }

    func testKeysLoadFromPEMFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokens-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let privateFile = directory.appendingPathComponent("signing.key").path
        let publicFile = directory.appendingPathComponent("signing.pub.pem").path
        try signingKey.privateKey.pemRepresentation.write(toFile: privateFile, atomically: true, encoding: .utf8)
        try signingKey.privateKey.publicKey.pemRepresentation.write(
            toFile: publicFile, atomically: true, encoding: .utf8)

        XCTAssertEqual(try TokenSigningKey.load(pemFile: privateFile).keyID, signingKey.keyID)
        XCTAssertEqual(try TokenVerificationKey.load(pemFile: publicFile), signingKey.verificationKey)
        XCTAssertEqual(try TokenVerificationKey.load(pemFile: privateFile), signingKey.verificationKey)
        XCTAssertThrowsError(try TokenSigningKey.load(pemFile: publicFile)) { error in
            XCTAssertTrue("\(error)".contains(publicFile), "\(error)")
        }
        let missing = directory.appendingPathComponent("missing.key").path
        XCTAssertThrowsError(try TokenSigningKey.load(pemFile: missing)) { error in
            XCTAssertTrue("\(error)".contains("no such file"), "\(error)")
        }
        XCTAssertThrowsError(try TokenVerificationKey.load(pemFile: missing))
    }

    /// Both keys of a rotation are accepted; dropping the old one rejects its tokens.
    func testKeyRotation() throws {
        let newKey = TokenSigningKey(privateKey: .generate())
        let oldToken = try AccessTokenIssuer(signingKey: signingKey, now: clock.function)
            .issue(userID: "old", role: .customer, sessionID: nil).token
        let newToken = try AccessTokenIssuer(signingKey: newKey, now: clock.function)
            .issue(userID: "new", role: .customer, sessionID: nil).token
        let during = JWTVerifier(keys: [signingKey.verificationKey, newKey.verificationKey], now: clock.function)
        XCTAssertEqual(try during.claims(of: oldToken).userID, "old")
        XCTAssertEqual(try during.claims(of: newToken).userID, "new")
        let after = JWTVerifier(keys: [newKey.verificationKey], now: clock.function)
        XCTAssertEqual(try after.claims(of: newToken).userID, "new")
        assertRejected(oldToken, by: after, "unknown signing key")
    }
}
