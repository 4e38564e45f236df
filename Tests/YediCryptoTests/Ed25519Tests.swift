import XCTest
import YediCrypto

final class Ed25519Tests: XCTestCase {
    private struct Vector {
        var secretKey: String
        var publicKey: String
        var message: String
        var signature: String
    }

    /// RFC 8032 section 7.1, TEST 1, 2 and 3.
    private let vectors = [
        Vector(
            secretKey: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            publicKey: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
            message: "",
            signature: """
                e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155\
                5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b
                """
        ),
        Vector(
            secretKey: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            publicKey: "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
            message: "72",
            signature: """
                92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da\
                085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00
                """
        ),
        Vector(
            secretKey: "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
            publicKey: "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
            message: "af82",
            signature: """
                6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac\
                18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a
                """
        ),
    ]

    func testRFC8032Vectors() throws {
        for (number, vector) in vectors.enumerated() {
            let key = try Ed25519PrivateKey(rawRepresentation: hexBytes(vector.secretKey))
            let message = hexBytes(vector.message)
            XCTAssertEqual(key.rawRepresentation, hexBytes(vector.secretKey))
            XCTAssertEqual(key.publicKey.rawRepresentation, hexBytes(vector.publicKey), "TEST \(number + 1)")
            let signature = try key.signature(for: message)
            XCTAssertEqual(signature, hexBytes(vector.signature), "TEST \(number + 1)")
            let publicKey = try Ed25519PublicKey(rawRepresentation: hexBytes(vector.publicKey))
            XCTAssertTrue(publicKey.isValidSignature(hexBytes(vector.signature), for: message))
        }
    }

    func testFlippedBitsFailVerification() throws {
        for vector in vectors {
            let publicKey = try Ed25519PublicKey(rawRepresentation: hexBytes(vector.publicKey))
            let message = hexBytes(vector.message)
            let signature = hexBytes(vector.signature)
            for bit in [0, 7, 100, 255, 256, 511] {
                var tampered = signature
                tampered[bit / 8] ^= 1 << UInt8(bit % 8)
                XCTAssertFalse(publicKey.isValidSignature(tampered, for: message), "signature bit \(bit)")
            }
            if !message.isEmpty {
                var tampered = message
                tampered[0] ^= 0x01
                XCTAssertFalse(publicKey.isValidSignature(signature, for: tampered))
            }
            XCTAssertFalse(publicKey.isValidSignature(signature, for: message + [0]), "an extra byte")
            XCTAssertFalse(publicKey.isValidSignature(Array(signature.dropLast()), for: message), "63 bytes")
            XCTAssertFalse(publicKey.isValidSignature([], for: message))
        }
        // Another key's valid signature is not this key's.
        let other = try Ed25519PublicKey(rawRepresentation: hexBytes(vectors[1].publicKey))
        XCTAssertFalse(other.isValidSignature(hexBytes(vectors[0].signature), for: []))
    }

    func testGeneratedKeysSignAndVerify() throws {
        let key = Ed25519PrivateKey.generate()
        let other = Ed25519PrivateKey.generate()
        XCTAssertNotEqual(key.rawRepresentation, other.rawRepresentation)
        XCTAssertNotEqual(key.publicKey, other.publicKey)
        let message = Array("hello, designers".utf8)
        let signature = try key.signature(for: message)
        XCTAssertEqual(signature.count, 64)
        XCTAssertTrue(key.publicKey.isValidSignature(signature, for: message))
        XCTAssertFalse(other.publicKey.isValidSignature(signature, for: message))
        XCTAssertEqual(try key.signature(for: message), signature, "Ed25519 is deterministic")
    }

    func testRawRepresentationsMustBe32Bytes() {
        XCTAssertThrowsError(try Ed25519PrivateKey(rawRepresentation: [UInt8](repeating: 1, count: 31)))
        XCTAssertThrowsError(try Ed25519PrivateKey(rawRepresentation: []))
        XCTAssertThrowsError(try Ed25519PublicKey(rawRepresentation: [UInt8](repeating: 1, count: 33)))
    }

    func testPEMRoundTrip() throws {
        let key = Ed25519PrivateKey.generate()
        let pem = key.pemRepresentation
        XCTAssertTrue(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"), pem)
        let reloaded = try Ed25519PrivateKey(pemRepresentation: pem)
        XCTAssertEqual(reloaded.rawRepresentation, key.rawRepresentation)
        XCTAssertEqual(reloaded.publicKey, key.publicKey)

        let publicPEM = key.publicKey.pemRepresentation
        XCTAssertTrue(publicPEM.hasPrefix("-----BEGIN PUBLIC KEY-----\n"), publicPEM)
        XCTAssertEqual(try Ed25519PublicKey(pemRepresentation: publicPEM), key.publicKey)
    }

    func testBadPEMsThrowClearErrors() throws {
        let key = Ed25519PrivateKey.generate()
        XCTAssertThrowsError(try Ed25519PrivateKey(pemRepresentation: ""))
        XCTAssertThrowsError(try Ed25519PrivateKey(pemRepresentation: "not a pem"))
        // A public key where a private one belongs, and the other way round.
        XCTAssertThrowsError(try Ed25519PrivateKey(pemRepresentation: key.publicKey.pemRepresentation))
        XCTAssertThrowsError(try Ed25519PublicKey(pemRepresentation: key.pemRepresentation))
        // Damaged DER inside the armour: the key's bytes cut short.
        var lines = key.pemRepresentation.split(separator: "\n").map(String.init)
        lines[1] = String(lines[1].dropLast(8))
        XCTAssertThrowsError(try Ed25519PrivateKey(pemRepresentation: lines.joined(separator: "\n"))) { error in
            XCTAssertTrue("\(error)".contains("PEM"), "\(error)")
        }
        // Another algorithm's key is refused by type, not mistaken for Ed25519.
        // A throwaway P-256 key made for this test.
        let ecKey = """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQghhJsYNIohdHDz/t0
            vwMysc/17NxfSK5MIqfWjG8+afehRANCAAQxVTJkGE1J/qT4423lNBqmlP+LYLDw
            v03P+Ktn5pN1f8dgO8FYlvw3pKhnxauqjvqePDpv+GLCp1AU9iUyws5z
            -----END PRIVATE KEY-----
            """
        XCTAssertThrowsError(try Ed25519PrivateKey(pemRepresentation: ecKey)) { error in
            XCTAssertTrue("\(error)".contains("another type"), "\(error)")
        }
    }
}
