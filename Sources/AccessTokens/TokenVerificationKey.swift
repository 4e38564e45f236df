import Foundation
import YediCrypto

/// A public key access tokens are checked against, with its `kid`.
public struct TokenVerificationKey: Sendable, Hashable {
    public let publicKey: Ed25519PublicKey
    public let keyID: String

    public init(publicKey: Ed25519PublicKey) {
        self.publicKey = publicKey
        self.keyID = KeyID.of(publicKey)
    }

    /// Reads a PEM file: an SPKI `PUBLIC KEY` (what services should be given), or a PKCS#8
    /// `PRIVATE KEY`, whose public half is used (handy in development, where one file serves both).
    public static func load(pemFile path: String) throws -> Self {
        let pem = try TokenKeyFile.read(path, what: "token verification key")
        do {
            if pem.contains("-----BEGIN PRIVATE KEY-----") {
                return Self(publicKey: try Ed25519PrivateKey(pemRepresentation: pem).publicKey)
            }
            return Self(publicKey: try Ed25519PublicKey(pemRepresentation: pem))
        } catch {
            throw CryptoError("the token verification key \(path) is not an Ed25519 PEM key: \(error)")
        }
    }
}

/// Reading PEM key files with errors that name the file.
enum TokenKeyFile {
    /// Keys are small; anything bigger is not a key file, and is not read whole into memory.
    static let maximumSize = 64 * 1024

    static func read(_ path: String, what: String) throws -> String {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw CryptoError("cannot read the \(what) \(path): no such file")
        }
        if let size = attributes[.size] as? NSNumber, size.intValue > maximumSize {
            throw CryptoError("the \(what) \(path) is too large to be a PEM key")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CryptoError("cannot read the \(what) \(path): not readable")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
