import YediCrypto

/// The `kid` of an Ed25519 token key: unpadded base64url of the first 12 bytes of SHA-256 of the raw
/// public key. Derived from the key itself, so issuer and verifiers agree with no separate setting, and
/// a rotated key gets a new id automatically.
enum KeyID {
    static func of(_ publicKey: Ed25519PublicKey) -> String {
        Base64URL.encode(Array(SHA256.hash(publicKey.rawRepresentation).prefix(12)))
    }
}
