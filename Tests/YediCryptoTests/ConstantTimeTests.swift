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
