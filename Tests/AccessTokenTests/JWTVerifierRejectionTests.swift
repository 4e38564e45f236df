import AccessTokens
import Foundation
import RPCCore
import XCTest
import YediCrypto

final class JWTVerifierRejectionTests: XCTestCase {
    private let privateKey = Ed25519PrivateKey.generate()
    private lazy var signingKey = TokenSigningKey(privateKey: privateKey)
    private let clock = TestClock()
    private lazy var verifier = JWTVerifier(keys: [signingKey.verificationKey], now: clock.function)
    private var now: Int { Int(clock.now.timeIntervalSince1970) }

    private func issue(lifetime: Duration = .seconds(900)) throws -> String {
        try AccessTokenIssuer(signingKey: signingKey, lifetime: lifetime, now: clock.function)
            .issue(userID: "u-1", role: .customer, sessionID: "s-1").token
    }

    // MARK: Validity period

    func testExpiryWithClockSkew() throws {
        let token = try issue(lifetime: .seconds(600))
        let issuedAt = clock.now
        clock.now = issuedAt.addingTimeInterval(600)
        XCTAssertNoThrow(try verifier.claims(of: token), "valid at exp")
        clock.now = issuedAt.addingTimeInterval(630)
        XCTAssertNoThrow(try verifier.claims(of: token), "valid within the 30 s skew")
        clock.now = issuedAt.addingTimeInterval(631)
        assertRejected(token, by: verifier, "access token expired")

        let strict = JWTVerifier(keys: [signingKey.verificationKey], allowedClockSkew: .zero, now: clock.function)
        clock.now = issuedAt.addingTimeInterval(600)
        XCTAssertNoThrow(try strict.claims(of: token))
        clock.now = issuedAt.addingTimeInterval(601)
        assertRejected(token, by: strict, "access token expired")
    }

    // MARK: Audience

    /// Tenant: a token minted for one app is refused by the services of another, and one without `aud`
    /// or `app`, or whose `aud` and `app` differ, or whose role its app does not have, too.
    func testTenantATokenForAnotherAppWithoutAppOrWithAnotherAppsRoleIsRefused() throws {
        let issuer = AccessTokenIssuer(signingKey: signingKey, now: clock.function)
        let slp = try issuer.issue(userID: "u-1", role: "member", sessionID: "s-1", app: "slp").token
        assertRejected(slp, by: verifier, "audience not accepted")
        let slpVerifier = JWTVerifier(
            keys: [signingKey.verificationKey], apps: ["slp": ["member"]], now: clock.function)
        XCTAssertEqual(try slpVerifier.claims(of: slp).app, "slp")
        assertRejected(try issue(), by: slpVerifier, "audience not accepted")
        let slpCustomer = try issuer.issue(userID: "u-1", role: .customer, sessionID: "s-1", app: "slp").token
        assertRejected(slpCustomer, by: slpVerifier, "slp has no such role")
        let yediMember = try issuer.issue(userID: "u-1", role: "member", sessionID: "s-1").token
        assertRejected(yediMember, by: verifier, "yedi has no such role")
        for claims in [
            #"{"iss":"yedi-account","sub":"u-1","role":"customer","iat":\#(now),"exp":\#(now + 600)}"#,
            #"{"iss":"yedi-account","aud":"yedi","sub":"u-1","role":"customer","iat":\#(now),"exp":\#(now + 600)}"#,
            #"{"iss":"yedi-account","app":"yedi","sub":"u-1","role":"customer","iat":\#(now),"exp":\#(now + 600)}"#,
            #"{"iss":"yedi-account","aud":"slp","app":"yedi","sub":"u-1","role":"customer","iat":\#(now),"exp":\#(now + 600)}"#,
            #"{"iss":"yedi-account","aud":"YEDI","app":"YEDI","sub":"u-1","role":"customer","iat":\#(now),"exp":\#(now + 600)}"#,
        ] {
            let token = try HandMadeToken.signed(
                header: HandMadeToken.header(kid: signingKey.keyID), claims: claims, key: privateKey)
            assertRejected(token, by: verifier, "app is required, and aud must name the same app")
        }
        XCTAssertNoThrow(try verifier.claims(of: try issue()))
    }

    func testNotYetValid() throws {
        let token = try issue()
        let issuedAt = clock.now
        clock.now = issuedAt.addingTimeInterval(-30)
        XCTAssertNoThrow(try verifier.claims(of: token), "a server 30 s behind still accepts it")
        clock.now = issuedAt.addingTimeInterval(-31)
        assertRejected(token, by: verifier, "access token not yet valid")
    }

    // MARK: Tampering

    /// Flips one bit inside part `index` (after decoding), re-encodes, and returns the token.
    private func flipping(_ token: String, part index: Int, byte: Int) throws -> String {
        var parts = token.split(separator: ".").map(String.init)
        var bytes = try XCTUnwrap(Base64URL.decode(parts[index]))
        bytes[byte] ^= 0x01
        parts[index] = Base64URL.encode(bytes)
        return parts.joined(separator: ".")
    }

    func testFlippedBitsAreRejected() throws {
        let token = try issue()
        XCTAssertNoThrow(try verifier.claims(of: token))
        // Header: `{"alg":"EdDSA","typ":"JWT",...`: byte 23 is inside "JWT", so it stays valid JSON.
        assertRejected(try flipping(token, part: 0, byte: 23), by: verifier, "access token signature invalid")
        // Claims: the last byte of the user id, `u-1` -> `u-0`: a different user, same signature.
        let claimsJSON = String(
            decoding: try XCTUnwrap(Base64URL.decode(String(token.split(separator: ".")[1]))), as: UTF8.self)
        let userByte = try XCTUnwrap(claimsJSON.utf8.firstIndex(of: UInt8(ascii: "1")))
        let offset = claimsJSON.utf8.distance(from: claimsJSON.utf8.startIndex, to: userByte)
        assertRejected(try flipping(token, part: 1, byte: offset), by: verifier, "access token signature invalid")
        for byte in [0, 31, 32, 63] {
            assertRejected(try flipping(token, part: 2, byte: byte), by: verifier, "access token signature invalid")
        }
    }

    func testAnotherKeyWithTheSameKeyIDIsRejected() throws {
        let forged = try HandMadeToken.signed(
            header: HandMadeToken.header(kid: signingKey.keyID),
            claims: HandMadeToken.claims(sub: "admin", iat: now, exp: now + 600),
            key: .generate()
        )
        assertRejected(forged, by: verifier, "access token signature invalid")
    }

    func testUnknownKeyID() throws {
        let other = TokenSigningKey(privateKey: .generate())
        let token = try AccessTokenIssuer(signingKey: other, now: clock.function)
            .issue(userID: "u-1", role: .customer, sessionID: nil).token
        assertRejected(token, by: verifier, "unknown signing key")
    }

    // MARK: Algorithm confusion

    func testOnlyEdDSAIsAccepted() throws {
        let claims = HandMadeToken.claims(iat: now, exp: now + 600)
        let kid = signingKey.keyID
        // alg "none" with no signature, and with a (real) signature.
        let unsigned =
            HandMadeToken.part(HandMadeToken.header(kid: kid, alg: "none")) + "." + HandMadeToken.part(claims) + "."
        assertRejected(unsigned, by: verifier, "access token malformed")
        for alg in ["none", "None", "HS256", "RS256", "ES256", "eddsa", "Ed25519", ""] {
            let token = try HandMadeToken.signed(
                header: HandMadeToken.header(kid: kid, alg: alg), claims: claims, key: privateKey)
            assertRejected(token, by: verifier, "access token algorithm not accepted")
        }
        let noAlg = try HandMadeToken.signed(header: #"{"typ":"JWT","kid":"\#(kid)"}"#, claims: claims, key: privateKey)
        assertRejected(noAlg, by: verifier, "access token algorithm not accepted")
        let numberAlg = try HandMadeToken.signed(header: #"{"alg":1,"kid":"\#(kid)"}"#, claims: claims, key: privateKey)
        assertRejected(numberAlg, by: verifier, "access token malformed")

        // HS256 keyed with the public key (raw and PEM): the classic confusion attack.
        for secret in [privateKey.publicKey.rawRepresentation, Array(privateKey.publicKey.pemRepresentation.utf8)] {
            let input =
                HandMadeToken.part(HandMadeToken.header(kid: kid, alg: "HS256")) + "." + HandMadeToken.part(claims)
            let mac = HandMadeToken.hmacSHA256(key: secret, message: Array(input.utf8))
            assertRejected(input + "." + Base64URL.encode(mac), by: verifier, "access token algorithm not accepted")
        }
        // The same claims properly signed are accepted: the rejections above are about alg alone.
        let good = try HandMadeToken.signed(header: HandMadeToken.header(kid: kid), claims: claims, key: privateKey)
        XCTAssertEqual(try verifier.claims(of: good).userID, "u-1")
    }

    func testHMACHelperMatchesRFC4231() {
        // RFC 4231 test case 2, so the forged HS256 tokens above are real HS256.
        let mac = HandMadeToken.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        XCTAssertEqual(SHA256.hex(mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    func testCriticalExtensionsAreRejected() throws {
        let token = try HandMadeToken.signed(
            header: #"{"alg":"EdDSA","kid":"\#(signingKey.keyID)","crit":["exp"]}"#,
            claims: HandMadeToken.claims(iat: now, exp: now + 600),
            key: privateKey
        )
        assertRejected(token, by: verifier, "critical extensions")
    }

    // MARK: Garbage

    func testMalformedTokens() throws {
        let token = try issue()
        let parts = token.split(separator: ".").map(String.init)
        assertRejected("", by: verifier, "access token malformed")
        assertRejected("garbage", by: verifier, "access token malformed")
        assertRejected("🙂.🙂.🙂", by: verifier, "access token malformed")
        assertRejected("\(parts[0]).\(parts[1])", by: verifier, "access token malformed")
        assertRejected("\(token).\(parts[2])", by: verifier, "access token malformed")
        assertRejected("\(parts[0])..\(parts[2])", by: verifier, "access token malformed")
        assertRejected("\(parts[0]).\(parts[1]).\(parts[2])=", by: verifier, "access token malformed")
        assertRejected(" \(token)", by: verifier, "access token malformed")
        assertRejected(
            "\(HandMadeToken.part("not json")).\(parts[1]).\(parts[2])", by: verifier, "access token malformed")
        assertRejected("\(HandMadeToken.part("[1,2]")).\(parts[1]).\(parts[2])", by: verifier, "access token malformed")
        assertRejected(String(repeating: "a", count: 5000), by: verifier, "access token too large")
        assertRejected(token + String(repeating: "A", count: 4096), by: verifier, "access token too large")
        XCTAssertNoThrow(try verifier.claims(of: token), "the genuine token still verifies")
    }

    /// Signed by the right key but with claims that are missing or of the wrong type.
    func testBadClaimsAreRejectedAfterTheSignature() throws {
        let kid = signingKey.keyID
        let cases: [(String, String)] = [
            (#"{"iss":"yedi-account","role":"customer","iat":\#(now),"exp":\#(now + 600)}"#, "claims invalid"),
            (#"{"iss":"yedi-account","sub":"u-1","iat":\#(now),"exp":\#(now + 600)}"#, "claims invalid"),
            (#"{"iss":"yedi-account","sub":"u-1","role":"customer","exp":\#(now + 600)}"#, "claims invalid"),
            (#"{"iss":"yedi-account","sub":"u-1","role":"customer","iat":\#(now)}"#, "claims invalid"),
            (#"{"iss":"yedi-account","sub":7,"role":"customer","iat":\#(now),"exp":\#(now + 600)}"#, "claims invalid"),
            (
                #"{"iss":"yedi-account","sub":"u-1","role":"customer","iat":\#(now),"exp":"\#(now + 600)"}"#,
                "claims invalid"
            ),
            (#"{"iss":"yedi-account","sub":"u-1","role":"customer","iat":\#(now),"exp":true}"#, "claims invalid"),
            (#"{"iss":"yedi-account","sub":"","role":"customer","iat":\#(now),"exp":\#(now + 600)}"#, "claims invalid"),
            (#"{"iss":"evil","sub":"u-1","role":"customer","iat":\#(now),"exp":\#(now + 600)}"#, "issuer not accepted"),
            (#"{"sub":"u-1","role":"customer","iat":\#(now),"exp":\#(now + 600)}"#, "issuer not accepted"),
            (#"["u-1"]"#, "claims invalid"),
        ]
        for (claims, reason) in cases {
            let token = try HandMadeToken.signed(
                header: HandMadeToken.header(kid: kid), claims: claims, key: privateKey)
            assertRejected(token, by: verifier, reason)
        }
    }
}
