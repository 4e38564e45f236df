import XCTest
import YediCrypto

final class ScryptTests: XCTestCase {
    /// RFC 7914 section 12, first vector.
    func testEmptyPasswordAndSalt() throws {
        let key = try Scrypt.deriveKey(password: [], salt: [], logN: 4, r: 1, p: 1, keyLength: 64)
        XCTAssertEqual(
            key,
            hexBytes(
                """
                77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442\
                fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906
                """
            )
        )
    }

    /// RFC 7914 section 12, second vector (N = 1024, r = 8, p = 16).
    func testPasswordNaCl() throws {
        let key = try Scrypt.deriveKey(
            password: Array("password".utf8),
            salt: Array("NaCl".utf8),
            parameters: .init(logN: 10, r: 8, p: 16, saltLength: 4, keyLength: 64)
        )
        XCTAssertEqual(
            key,
            hexBytes(
                """
                fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162\
                2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640
                """
            )
        )
    }

    func testInvalidParametersThrow() {
        XCTAssertThrowsError(try Scrypt.deriveKey(password: [], salt: [], logN: 0, r: 1, p: 1, keyLength: 32))
        XCTAssertThrowsError(try Scrypt.deriveKey(password: [], salt: [], logN: 4, r: 0, p: 1, keyLength: 32))
        XCTAssertThrowsError(try Scrypt.deriveKey(password: [], salt: [], logN: 4, r: 1, p: 1, keyLength: 0))
    }
}
