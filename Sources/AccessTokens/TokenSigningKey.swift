import YediCrypto

/// The private key the account service signs access tokens with, and its `kid`.
public struct TokenSigningKey: Sendable {
    public let privateKey: Ed25519PrivateKey
    public let keyID: String

    public init(privateKey: Ed25519PrivateKey) {
        self.privateKey = privateKey
        self.keyID = KeyID.of(privateKey.publicKey)
    }

    /// Reads a PKCS#8 `PRIVATE KEY` PEM file (`openssl genpkey -algorithm ED25519`).
    public static func load(pemFile path: String) throws -> Self {
        let pem = try TokenKeyFile.read(path, what: "token signing key")
        do {
            return Self(privateKey: try Ed25519PrivateKey(pemRepresentation: pem))
        } catch {
            throw CryptoError("the token signing key \(path) is not an Ed25519 private key PEM: \(error)")
        }
    }

    /// What verifiers need to accept this key's tokens.
    public var verificationKey: TokenVerificationKey {
        TokenVerificationKey(publicKey: privateKey.publicKey)
    }
}
