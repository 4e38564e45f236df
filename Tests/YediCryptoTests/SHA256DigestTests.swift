import XCTest
import YediCrypto

/// The value digest (the token cache's key) is SHA-256, the same whatever holds the bytes.
final class SHA256DigestTests: XCTestCase {
    func testTheDigestIsSHA256OfTheBytes() {
        // FIPS 180-2, appendix B.1.
        XCTAssertEqual(
            SHA256.hex(SHA256.hash("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(
            SHA256.hex(SHA256.hash([UInt8]())), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    func testATextASubstringAndANonContiguousSequenceGiveTheSameDigest() {
        let text = "Bearer eyJhbGciOiJFZERTQSJ9.payload.signature"
        let token = text.dropFirst(7)
        let expected = SHA256.digest(Array(token.utf8))
        XCTAssertEqual(SHA256.digest(token.utf8), expected)
        XCTAssertEqual(SHA256.digest(String(token).utf8), expected)
        XCTAssertEqual(SHA256.digest(token.utf8.lazy.map { $0 }), expected, "the copying path")
        XCTAssertNotEqual(SHA256.digest(token.utf8.dropLast()), expected)
        XCTAssertEqual(Set([expected, SHA256.digest(token.utf8)]).count, 1)
    }
}
