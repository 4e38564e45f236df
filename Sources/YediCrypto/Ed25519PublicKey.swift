/// An Ed25519 verification key. Equal and hashed by its 32 raw bytes.
public struct Ed25519PublicKey: Sendable, Hashable {
    /// The 32-byte encoded public key (RFC 8032 section 5.1.2).
    public let rawRepresentation: [UInt8]
    private let key: EVPKey

    private init(key: EVPKey) throws(CryptoError) {
        self.key = key
        self.rawRepresentation = try key.rawPublicKey()
    }

    public init(rawRepresentation: [UInt8]) throws(CryptoError) {
        try self.init(key: EVPKey.ed25519(rawPublicKey: rawRepresentation))
    }

    /// An SPKI `-----BEGIN PUBLIC KEY-----` PEM, as `openssl pkey -pubout` writes it.
    public init(pemRepresentation: String) throws(CryptoError) {
        try self.init(key: EVPKey.ed25519(pem: pemRepresentation, private: false))
    }

    public var pemRepresentation: String {
        do {
            return try key.publicPEM()
        } catch {
            fatalError("encoding an Ed25519 public key as PEM failed: \(error)")
        }
    }

    /// True only for a valid signature of exactly `message` by this key (RFC 8032 verification, which
    /// OpenSSL makes strict: non-canonical S is rejected).
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        key.verify(signature, for: message)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.rawRepresentation == rhs.rawRepresentation
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(rawRepresentation)
    }
}
