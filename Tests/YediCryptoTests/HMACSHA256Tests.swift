import XCTest
import YediCrypto

/// HMAC-SHA256 against RFC 4231's test vectors (short key, short "Jefe" key, a key longer than a block).
final class HMACSHA256Tests: XCTestCase {
    func testRFC4231Vectors() {
        XCTAssertEqual(
            SHA256.hex(HMACSHA256.mac(key: [UInt8](repeating: 0x0B, count: 20), Array("Hi There".utf8))),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        XCTAssertEqual(
            SHA256.hex(HMACSHA256.mac(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        XCTAssertEqual(
            SHA256.hex(
                HMACSHA256.mac(
                    key: [UInt8](repeating: 0xAA, count: 131),
                    Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }
}
