import XCTest
import YediCrypto

final class ConstantTimeTests: XCTestCase {
    func testEquals() {
        XCTAssertTrue(ConstantTime.equals([], []))
        XCTAssertTrue(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        XCTAssertFalse(ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        XCTAssertFalse(ConstantTime.equals([0, 2, 3], [1, 2, 3]))
        XCTAssertFalse(ConstantTime.equals([1, 2, 3], [1, 2]))
        XCTAssertFalse(ConstantTime.equals([], [0]))
    }

    /// Text, eight bytes a step: a difference at every offset of every length from 0 to 41 bytes is found
    /// (in the word loop and in the tail), and equal texts are equal.
    func testTextEqualsFindsADifferenceAtEveryOffset() {
        for length in 0...41 {
            let text = String(repeating: "k", count: length)
            XCTAssertTrue(ConstantTime.equals(Substring(text), String(text)), "length \(length)")
            XCTAssertFalse(ConstantTime.equals(Substring(text + "k"), text), "length \(length) + 1")
            for offset in 0..<length {
                var bytes = Array(text.utf8)
                bytes[offset] = UInt8(ascii: "j")
                let other = String(decoding: bytes, as: UTF8.self)
                XCTAssertFalse(ConstantTime.equals(Substring(other), text), "length \(length), offset \(offset)")
            }
        }
        let token = "Bearer " + String(repeating: "é", count: 150)
        XCTAssertTrue(ConstantTime.equals(token.dropFirst(7), String(token.dropFirst(7))), "a substring's bytes")
        XCTAssertFalse(ConstantTime.equals(token.dropFirst(6), String(token.dropFirst(7))))
    }
}

final class SecureRandomTests: XCTestCase {
    func testLengthsAndVariety() {
        XCTAssertEqual(SecureRandom.bytes(0), [])
        XCTAssertEqual(SecureRandom.bytes(1).count, 1)
        let first = SecureRandom.bytes(32)
        let second = SecureRandom.bytes(32)
        XCTAssertEqual(first.count, 32)
        XCTAssertNotEqual(first, second, "two 256-bit draws collided")
        XCTAssertNotEqual(first, [UInt8](repeating: 0, count: 32))
    }
}
