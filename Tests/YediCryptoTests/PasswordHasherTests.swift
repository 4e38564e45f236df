import XCTest
import YediCrypto

final class PasswordHasherTests: XCTestCase {
    private let hasher = PasswordHasher(parameters: .fastForTests)

    func testRoundTrip() async throws {
        let encoded = try await hasher.hash("correct horse battery staple")
        let right = try await hasher.verify("correct horse battery staple", against: encoded)
        let wrong = try await hasher.verify("correct horse battery stapler", against: encoded)
        let empty = try await hasher.verify("", against: encoded)
        XCTAssertTrue(right)
        XCTAssertFalse(wrong)
        XCTAssertFalse(empty)
    }

    func testUnicodePasswords() async throws {
        let encoded = try await hasher.hash("비밀번호🔑")
        let right = try await hasher.verify("비밀번호🔑", against: encoded)
        let wrong = try await hasher.verify("비밀번호", against: encoded)
        XCTAssertTrue(right)
        XCTAssertFalse(wrong)
    }

    func testFreshSaltEachTime() async throws {
        let first = try await hasher.hash("same password")
        let second = try await hasher.hash("same password")
        XCTAssertNotEqual(first, second)
        XCTAssertNotEqual(first.split(separator: "$")[2], second.split(separator: "$")[2], "salts differ")
    }

    func testEncodingStoresParameters() async throws {
        let parameters = PasswordHasher.Parameters(logN: 11, r: 4, p: 2, saltLength: 20, keyLength: 40)
        let encoded = try await PasswordHasher(parameters: parameters).hash("pw")
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 5, encoded)
        XCTAssertEqual(parts[1], "scrypt")
        XCTAssertEqual(parts[2], "ln=11,r=4,p=2")
        XCTAssertEqual(Base64URL.decode(String(parts[3]))?.count, 20)
        XCTAssertEqual(Base64URL.decode(String(parts[4]))?.count, 40)
    }

    /// A hasher with other parameters still verifies: the stored ones are used, not its own.
    func testStoredParametersAreHonoured() async throws {
        let old = PasswordHasher(parameters: .init(logN: 9, r: 8, p: 1))
        let encoded = try await old.hash("pw")
        let verifiedByNewer = try await hasher.verify("pw", against: encoded)
        XCTAssertTrue(verifiedByNewer)
        // And the stored parameters really are the ones that matter: the same salt under the hasher's
        // own parameters gives another key.
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false)
        let salt = try XCTUnwrap(Base64URL.decode(String(parts[3])))
        let stored = try XCTUnwrap(Base64URL.decode(String(parts[4])))
        XCTAssertEqual(
            try Scrypt.deriveKey(password: Array("pw".utf8), salt: salt, logN: 9, r: 8, p: 1, keyLength: 32), stored)
        XCTAssertNotEqual(
            try Scrypt.deriveKey(password: Array("pw".utf8), salt: salt, parameters: .fastForTests), stored)
    }

    /// A hash made independently (with the RFC 7914 scrypt vector's inputs) verifies: the format is scrypt.
    func testVerifiesAHashAssembledByHand() async throws {
        let salt = Array("NaCl-salt-16byte".utf8)
        let key = try Scrypt.deriveKey(
            password: Array("pleaseletmein".utf8), salt: salt, logN: 10, r: 8, p: 1, keyLength: 32)
        let encoded = "$scrypt$ln=10,r=8,p=1$\(Base64URL.encode(salt))$\(Base64URL.encode(key))"
        let right = try await hasher.verify("pleaseletmein", against: encoded)
        let wrong = try await hasher.verify("pleaseletmeout", against: encoded)
        XCTAssertTrue(right)
        XCTAssertFalse(wrong)
    }

    func testMalformedEncodingsThrow() async throws {
        let good = try await hasher.hash("pw")
        let parts = good.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        let salt = parts[3]
        let hash = parts[4]
        let malformed = [
            "",
            "plaintext",
            good + "$",
            "$argon2id$v=19$m=65536,t=3,p=4$\(salt)$\(hash)",
            "scrypt$ln=10,r=8,p=1$\(salt)$\(hash)",
            "$scrypt$ln=10,r=8$\(salt)$\(hash)",
            "$scrypt$ln=10,r=8,p=1,p=1$\(salt)$\(hash)",
            "$scrypt$ln=10,r=8,p=-1$\(salt)$\(hash)",
            "$scrypt$ln=10,r=8,p=+1$\(salt)$\(hash)",
            "$scrypt$ln=x,r=8,p=1$\(salt)$\(hash)",
            "$scrypt$ln=10,r=8,p=1$\(salt)==$\(hash)",
            "$scrypt$ln=10,r=8,p=1$\(salt)$",
            "$scrypt$ln=10,r=8,p=1$$\(hash)",
            "$scrypt$ln=10,r=8,p=1$c2FsdA$\(hash)",  // a 4-byte salt is too short
            // Corrupted rows asking for huge work or memory are refused before anything runs.
            "$scrypt$ln=30,r=8,p=1$\(salt)$\(hash)",
            "$scrypt$ln=20,r=32,p=1$\(salt)$\(hash)",
            "$scrypt$ln=10,r=8,p=9999$\(salt)$\(hash)",
            "$scrypt$ln=99999999999999999999,r=8,p=1$\(salt)$\(hash)",
        ]
        for encoded in malformed {
            do {
                _ = try await hasher.verify("pw", against: encoded)
                XCTFail("accepted \(encoded)")
            } catch let error as CryptoError {
                XCTAssertTrue(error.description.hasPrefix("malformed password hash"), error.description)
                XCTAssertFalse(error.description.contains(hash), "the error must not echo the stored hash")
            }
        }
        let stillGood = try await hasher.verify("pw", against: good)
        XCTAssertTrue(stillGood)
    }

    func testNeedsRehash() async throws {
        let current = PasswordHasher(parameters: .init(logN: 11, r: 8, p: 1))
        let weaker = try await PasswordHasher(parameters: .fastForTests).hash("pw")
        let same = try await current.hash("pw")
        let stronger = try await PasswordHasher(parameters: .init(logN: 12, r: 8, p: 1)).hash("pw")
        let shorterKey = try await PasswordHasher(parameters: .init(logN: 11, r: 8, p: 1, keyLength: 16)).hash("pw")
        XCTAssertTrue(current.needsRehash(weaker))
        XCTAssertFalse(current.needsRehash(same))
        XCTAssertFalse(current.needsRehash(stronger))
        XCTAssertTrue(current.needsRehash(shorterKey))
        XCTAssertTrue(current.needsRehash("garbage"))
    }

    func testDefaultParametersAreProductionStrength() {
        let parameters = PasswordHasher.Parameters.default
        XCTAssertGreaterThanOrEqual(parameters.logN, 15)
        XCTAssertGreaterThanOrEqual(parameters.r, 8)
        XCTAssertGreaterThanOrEqual(parameters.saltLength, 16)
        XCTAssertGreaterThanOrEqual(parameters.keyLength, 32)
        XCTAssertEqual(PasswordHasher().parameters, parameters)
    }

    /// Many hashes at once (more than the pool has threads) all complete, each with its own password.
    func testConcurrentHashes() async throws {
        let hasher = self.hasher
        let hashes = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for index in 0..<6 { group.addTask { (index, try await hasher.hash("pw\(index)")) } }
            return try await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
        }
        XCTAssertEqual(Set(hashes.values).count, 6)
        for (index, encoded) in hashes {
            let right = try await hasher.verify("pw\(index)", against: encoded)
            let other = try await hasher.verify("pw\((index + 1) % 6)", against: encoded)
            XCTAssertTrue(right)
            XCTAssertFalse(other)
        }
    }
}
