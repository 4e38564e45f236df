/// An Ed25519 signing key (RFC 8032, pure Ed25519).
///
/// A cheap `Sendable` value: the raw 32-byte seed plus a shared, immutable OpenSSL key built once.
public struct Ed25519PrivateKey: Sendable {
    /// The 32-byte private key (RFC 8032's secret key, the seed).
    public let rawRepresentation: [UInt8]
    public let publicKey: Ed25519PublicKey
    private let key: EVPKey

    private init(key: EVPKey) throws(CryptoError) {
        self.key = key
        self.rawRepresentation = try key.rawPrivateKey()
        self.publicKey = try Ed25519PublicKey(rawRepresentation: key.rawPublicKey())
    }

    /// A new key from 32 random bytes, which is how RFC 8032 (5.1.5) defines key generation.
    public static func generate() -> Self {
        do {
            return try Self(rawRepresentation: SecureRandom.bytes(EVPKey.rawLength))
        } catch {
            // Any 32 bytes are a valid seed: failing here means libcrypto itself is broken.
            fatalError("Ed25519 key generation failed: \(error)")
        }
    }

    /// The key whose 32-byte seed is `rawRepresentation`.
    public init(rawRepresentation: [UInt8]) throws(CryptoError) {
        try self.init(key: EVPKey.ed25519(rawPrivateKey: rawRepresentation))
    }

    /// A PKCS#8 `-----BEGIN PRIVATE KEY-----` PEM, as `openssl genpkey -algorithm ED25519` writes it.
    public init(pemRepresentation: String) throws(CryptoError) {
        try self.init(key: EVPKey.ed25519(pem: pemRepresentation, private: true))
    }

    /// PKCS#8 PEM (unencrypted: protect the file, mode 0600).
    public var pemRepresentation: String {
        do {
            return try key.privatePEM()
        } catch {
            fatalError("encoding an Ed25519 private key as PEM failed: \(error)")
        }
    }

    /// The 64-byte Ed25519 signature of `message`.
    public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try key.sign(message)
    }
}
