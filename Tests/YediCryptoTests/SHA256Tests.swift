import XCTest
import YediCrypto

final class SHA256Tests: XCTestCase {
    /// FIPS 180-2 appendix B vectors.
    func testKnownVectors() {
        XCTAssertEqual(
            SHA256.hex(SHA256.hash("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        )
        XCTAssertEqual(
            SHA256.hex(SHA256.hash("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        )
        XCTAssertEqual(
            SHA256.hex(SHA256.hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        )
    }

    func testBytesAndTextAgree() {
        let text = "안녕 Yedi"
        XCTAssertEqual(SHA256.hash(text), SHA256.hash(Array(text.utf8)))
        XCTAssertEqual(SHA256.hash(text).count, 32)
        XCTAssertNotEqual(SHA256.hash("abc"), SHA256.hash("abd"))
    }

    func testHex() {
        XCTAssertEqual(SHA256.hex([]), "")
        XCTAssertEqual(SHA256.hex([0x00, 0x0F, 0xA5, 0xFF]), "000fa5ff")
    }
}
