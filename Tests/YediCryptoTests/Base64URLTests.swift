import XCTest
import YediCrypto

final class Base64URLTests: XCTestCase {
    /// RFC 4648 section 10 vectors, unpadded.
    func testRFC4648Vectors() {
        let vectors = [
            "": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy",
        ]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64URL.encode(Array(plain.utf8)), encoded, plain)
            XCTAssertEqual(Base64URL.decode(encoded), Array(plain.utf8), encoded)
        }
    }

    func testURLAlphabet() {
        XCTAssertEqual(Base64URL.encode([0xFB, 0xFF, 0xBF]), "-_-_")
        XCTAssertEqual(Base64URL.decode("-_-_"), [0xFB, 0xFF, 0xBF])
        XCTAssertNil(Base64URL.decode("+/+/"), "the standard alphabet's + and / are not base64url")
    }

    func testRoundTripAllLengths() {
        for length in 0..<70 {
            let bytes = SecureRandom.bytes(length)
            let encoded = Base64URL.encode(bytes)
            XCTAssertFalse(encoded.contains("="))
            XCTAssertEqual(Base64URL.decode(encoded), bytes, "length \(length)")
        }
    }

    func testRejectsNonCanonicalInput() {
        XCTAssertNil(Base64URL.decode("Zg=="), "padding")
        XCTAssertNil(Base64URL.decode("Zg="), "padding")
        XCTAssertNil(Base64URL.decode("Z"), "a lone character cannot hold a byte")
        XCTAssertNil(Base64URL.decode("Zm9vY"), "5 characters")
        XCTAssertNil(Base64URL.decode("Zh"), "non-zero trailing bits (canonical is Zg)")
        XCTAssertNil(Base64URL.decode("Zm9"), "non-zero trailing bits (canonical is Zm8)")
        XCTAssertNil(Base64URL.decode("Zm 9v"), "whitespace")
        XCTAssertNil(Base64URL.decode("Zm9v\n"), "newline")
        XCTAssertNil(Base64URL.decode("Zm9v."), "a dot")
        XCTAssertNil(Base64URL.decode("Zm9vé"), "non-ASCII")
    }
}
