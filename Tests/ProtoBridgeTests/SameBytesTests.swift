import XCTest

@testable import ProtoBridge

/// `SameBytes`, eight bytes a step: a difference at every offset of every length from 0 to 41 bytes is
/// found (in the word loop and in the tail), and equal runs are equal.
final class SameBytesTests: XCTestCase {
    func testADifferenceIsFoundAtEveryOffsetOfEveryLength() {
        for length in 0...41 {
            let text = String(repeating: "k", count: length)
            XCTAssertTrue(SameBytes.equal(text, String(text)), "length \(length)")
            XCTAssertFalse(SameBytes.equal(text + "k", text), "length \(length) + 1")
            for offset in 0..<length {
                var bytes = Array(text.utf8)
                bytes[offset] = UInt8(ascii: "j")
                XCTAssertFalse(SameBytes.equal(String(decoding: bytes, as: UTF8.self), text), "\(length), \(offset)")
                bytes.withUnsafeBytes { XCTAssertFalse(SameBytes.equal(text, $0), "\(length), \(offset)") }
            }
        }
        let token = String(repeating: "토큰", count: 50)
        let copy = String(decoding: Array(token.utf8), as: UTF8.self)
        XCTAssertTrue(SameBytes.equal(token, copy), "the same bytes in other storage")
        XCTAssertFalse(SameBytes.equal(token, String(token.dropLast())))
    }
}
