import AccessTokens
import Foundation
import RPCCore
import XCTest
import YediCrypto

/// A clock tests set by hand.
final class TestClock: @unchecked Sendable {
    // @unchecked: tests set it from one thread between calls.
    var now: Date

    init(_ now: Date = Date(timeIntervalSince1970: 1_750_000_000)) {
        self.now = now
    }

    var function: @Sendable () -> Date { { [self] in self.now } }
}

/// Builds tokens part by part, so tests can make any header, claims or signature.
enum HandMadeToken {
    static func part(_ json: String) -> String { Base64URL.encode(Array(json.utf8)) }

    /// `header.claims.signature`, signed with `key` over the first two parts exactly as given.
    static func signed(header: String, claims: String, key: Ed25519PrivateKey) throws -> String {
        let input = part(header) + "." + part(claims)
        return input + "." + Base64URL.encode(try key.signature(for: Array(input.utf8)))
    }

    static func header(kid: String, alg: String = "EdDSA") -> String {
        #"{"alg":"\#(alg)","typ":"JWT","kid":"\#(kid)"}"#
    }

    static func claims(sub: String = "u-1", iat: Int, exp: Int, extra: String = "") -> String {
        #"{"iss":"yedi-account","aud":"yedi","app":"yedi","sub":"\#(sub)","role":"customer","iat":\#(iat),"exp":\#(exp)\#(extra)}"#
    }

    /// HMAC-SHA256 (RFC 2104), for forging an HS256 token keyed with the public key.
    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = SHA256.hash(block.map { $0 ^ 0x36 } + message)
        return SHA256.hash(block.map { $0 ^ 0x5C } + inner)
    }
}

extension XCTestCase {
    /// Asserts `token` is refused as UNAUTHENTICATED with a message containing `reason`, and that the
    /// message does not repeat the token.
    func assertRejected(
        _ token: String,
        by verifier: JWTVerifier,
        _ reason: String,
        file: StaticString = #filePath,
        line: UInt = #line
    ) {
        do {
            let claims = try verifier.claims(of: token)
            XCTFail("accepted: \(claims)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.code, .unauthenticated, file: file, line: line)
            XCTAssertTrue(
                error.message.contains(reason), "\"\(error.message)\" lacks \"\(reason)\"", file: file, line: line)
            for part in token.split(separator: ".") where part.count >= 8 {
                XCTAssertFalse(error.message.contains(part), "the message echoes the token", file: file, line: line)
            }
        }
    }
}
