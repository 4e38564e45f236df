import COpenSSL

/// An RSA public key for RS256 (RSASSA-PKCS1-v1_5 with SHA-256), the signature of the ID tokens Apple
/// and Google issue. They publish their keys as JWKs (modulus `n` and exponent `e`), so the key is built
/// from those: the two integers are encoded as a SubjectPublicKeyInfo and read by OpenSSL.
///
/// Through the system OpenSSL that already signs our tokens, rather than swift-crypto's `_RSA`: no new
/// package and no second copy of BoringSSL in the service.
public struct RSAPublicKey: Sendable {
    private let key: EVPKey

    /// Moduli of 2048 to 4096 bits; smaller ones are not safe, larger ones cost a stranger's token too
    /// much to check.
    public static let modulusBytes = 256...512

    /// The key of modulus `modulus` and exponent `exponent`, both unsigned big-endian (a JWK's `n` and `e`
    /// after base64url).
    public init(modulus: [UInt8], exponent: [UInt8]) throws(CryptoError) {
        let n = Array(modulus.drop { $0 == 0 })
        let e = Array(exponent.drop { $0 == 0 })
        guard Self.modulusBytes.contains(n.count) else {
            throw CryptoError("an RSA modulus of \(n.count * 8) bits; 2048 to 4096 are accepted")
        }
        guard (1...4).contains(e.count), e.last.map({ $0 & 1 == 1 }) == true else {
            throw CryptoError("an RSA exponent must be odd and at most 4 bytes")
        }
        let der = DER.sequence(
            DER.sequence(DER.rsaEncryption + DER.null)
                + DER.bitString(DER.sequence(DER.integer(n) + DER.integer(e))))
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw CryptoError.openSSL("d2i_PUBKEY (RSA)") }
        key = EVPKey(parsed)
    }

    /// True only for a valid RS256 signature of exactly `message` by this key. Errors count as invalid.
    public func isValidSHA256Signature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        key.verify(signature, for: message, digest: EVP_sha256())
    }
}

/// An RSA private key, for signing RS256 tokens where we play the provider: tests and fake providers.
public struct RSAPrivateKey: Sendable {
    private let key: EVPKey

    /// A PKCS #8 `PRIVATE KEY` or PKCS #1 `RSA PRIVATE KEY` PEM, unencrypted.
    public init(pemRepresentation pem: String) throws(CryptoError) {
        let bytes = Array(pem.utf8)
        guard !bytes.isEmpty, bytes.count <= 64 * 1_024 else { throw CryptoError("empty or oversized PEM") }
        CryptoError.drainOpenSSLErrors()
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let parsed else { throw CryptoError.openSSL("reading a PEM RSA private key") }
        key = EVPKey(parsed)
        guard EVP_PKEY_get_base_id(parsed) == EVP_PKEY_RSA else { throw CryptoError("the PEM holds no RSA key") }
    }

    /// The RS256 signature of `message`.
    public func signSHA256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try key.sign(message, digest: EVP_sha256())
    }

    /// The public key's modulus and exponent, unsigned big-endian: what a JWK publishes as `n` and `e`.
    public func publicComponents() throws(CryptoError) -> (modulus: [UInt8], exponent: [UInt8]) {
        (try key.bigNumber("n"), try key.bigNumber("e"))
    }
}

extension EVPKey {
    /// One of the key's integer parameters (`n`, `e`), unsigned big-endian.
    fileprivate func bigNumber(_ name: String) throws(CryptoError) -> [UInt8] {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pointer, name, &number) == 1, let number else {
            throw CryptoError.openSSL("EVP_PKEY_get_bn_param(\(name))")
        }
        defer { BN_free(number) }
        var bytes = [UInt8](repeating: 0, count: (Int(BN_num_bits(number)) + 7) / 8)
        let written = bytes.withUnsafeMutableBufferPointer { BN_bn2bin(number, $0.baseAddress) }
        return Array(bytes.prefix(Int(written)))
    }
}

/// The few DER shapes a SubjectPublicKeyInfo of an RSA key needs (X.690).
private enum DER {
    /// OBJECT IDENTIFIER 1.2.840.113549.1.1.1 (rsaEncryption).
    static let rsaEncryption: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]
    static let null: [UInt8] = [0x05, 0x00]

    static func sequence(_ content: [UInt8]) -> [UInt8] { element(0x30, content) }
    static func bitString(_ content: [UInt8]) -> [UInt8] { element(0x03, [0x00] + content) }
    /// A non-negative INTEGER from unsigned big-endian bytes without leading zeros.
    static func integer(_ magnitude: [UInt8]) -> [UInt8] {
        element(0x02, (magnitude.first ?? 0) & 0x80 != 0 || magnitude.isEmpty ? [0x00] + magnitude : magnitude)
    }

    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        [tag] + length(content.count) + content
    }

    static func length(_ count: Int) -> [UInt8] {
        guard count >= 0x80 else { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}
