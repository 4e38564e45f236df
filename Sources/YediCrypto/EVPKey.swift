import COpenSSL

/// Owns one OpenSSL `EVP_PKEY` (Ed25519, or RSA for RS256: `EVPKey+RSA.swift`) and frees it in `deinit`;
/// the only place key pointers live.
///
/// Built once per key value, so signing and verifying do not re-import the key each time. The key is
/// never mutated after creation and each operation gets its own `EVP_MD_CTX`, which OpenSSL 3 allows
/// from several threads at once.
final class EVPKey: @unchecked Sendable {
    // @unchecked: an immutable pointer to a key OpenSSL treats as read-only once made.
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    static let rawLength = 32

    static func ed25519(rawPrivateKey raw: [UInt8]) throws(CryptoError) -> EVPKey {
        guard raw.count == rawLength else {
            throw CryptoError("an Ed25519 private key is \(rawLength) bytes, not \(raw.count)")
        }
        let key = raw.withUnsafeBufferPointer {
            EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count)
        }
        guard let key else { throw CryptoError.openSSL("EVP_PKEY_new_raw_private_key (Ed25519)") }
        return EVPKey(key)
    }

    static func ed25519(rawPublicKey raw: [UInt8]) throws(CryptoError) -> EVPKey {
        guard raw.count == rawLength else {
            throw CryptoError("an Ed25519 public key is \(rawLength) bytes, not \(raw.count)")
        }
        let key = raw.withUnsafeBufferPointer {
            EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count)
        }
        guard let key else { throw CryptoError.openSSL("EVP_PKEY_new_raw_public_key (Ed25519)") }
        return EVPKey(key)
    }

    /// A key read from PEM: PKCS#8 `PRIVATE KEY` (`private: true`) or SPKI `PUBLIC KEY`; must be Ed25519.
    static func ed25519(pem: String, private isPrivate: Bool) throws(CryptoError) -> EVPKey {
        let bytes = Array(pem.utf8)
        guard !bytes.isEmpty, bytes.count <= Int(Int32.max) else { throw CryptoError("empty PEM") }
        let kind = isPrivate ? "Ed25519 private key" : "Ed25519 public key"
        CryptoError.drainOpenSSLErrors()
        let key: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            // No passphrase callback: an encrypted key fails rather than prompting on a terminal.
            return isPrivate
                ? PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
                : PEM_read_bio_PUBKEY(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let key else { throw CryptoError.openSSL("reading a PEM \(kind)") }
        let wrapped = EVPKey(key)
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_ED25519 else {
            throw CryptoError("the PEM holds a key of another type, not an \(kind)")
        }
        return wrapped
    }

    /// The 32-byte raw private key (the RFC 8032 seed).
    func rawPrivateKey() throws(CryptoError) -> [UInt8] {
        var raw = [UInt8](repeating: 0, count: Self.rawLength)
        var length = raw.count
        let rc = raw.withUnsafeMutableBufferPointer { EVP_PKEY_get_raw_private_key(pointer, $0.baseAddress, &length) }
        guard rc == 1, length == Self.rawLength else { throw CryptoError.openSSL("EVP_PKEY_get_raw_private_key") }
        return raw
    }

    /// The 32-byte raw public key (RFC 8032's encoding of A).
    func rawPublicKey() throws(CryptoError) -> [UInt8] {
        var raw = [UInt8](repeating: 0, count: Self.rawLength)
        var length = raw.count
        let rc = raw.withUnsafeMutableBufferPointer { EVP_PKEY_get_raw_public_key(pointer, $0.baseAddress, &length) }
        guard rc == 1, length == Self.rawLength else { throw CryptoError.openSSL("EVP_PKEY_get_raw_public_key") }
        return raw
    }

    /// PKCS#8 `PRIVATE KEY` PEM (unencrypted), as `openssl genpkey -algorithm ED25519` writes it.
    func privatePEM() throws(CryptoError) -> String {
        try writePEM("PEM_write_bio_PrivateKey") { bio in
            PEM_write_bio_PrivateKey(bio, pointer, nil, nil, 0, nil, nil)
        }
    }

    /// SPKI `PUBLIC KEY` PEM, as `openssl pkey -pubout` writes it.
    func publicPEM() throws(CryptoError) -> String {
        try writePEM("PEM_write_bio_PUBKEY") { bio in PEM_write_bio_PUBKEY(bio, pointer) }
    }

    private func writePEM(_ operation: String, _ write: (OpaquePointer) -> Int32) throws(CryptoError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.openSSL("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw CryptoError.openSSL(operation) }
        var text = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
            guard count > 0 else { break }
            text.append(contentsOf: chunk[0..<Int(count)])
        }
        CryptoError.drainOpenSSLErrors()  // BIO_read at the end of a memory BIO may queue nothing, or a retry
        return String(decoding: text, as: UTF8.self)
    }

    /// Ed25519 (pure, RFC 8032) signature of `message`: 64 bytes; with `digest` (`EVP_sha256()`), an RSA
    /// key's PKCS #1 v1.5 signature of the message's digest.
    func sign(_ message: [UInt8], digest: OpaquePointer? = nil) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.openSSL("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, digest, nil, pointer) == 1 else {
            throw CryptoError.openSSL("EVP_DigestSignInit")
        }
        var length = 0
        let sized = message.withUnsafeBufferPointer { input in
            EVP_DigestSign(context, nil, &length, input.baseAddress, input.count)
        }
        guard sized == 1, length > 0, digest != nil || length == 64 else { throw CryptoError.openSSL("EVP_DigestSign") }
        var signature = [UInt8](repeating: 0, count: length)
        let rc = message.withUnsafeBufferPointer { input in
            signature.withUnsafeMutableBufferPointer { output in
                EVP_DigestSign(context, output.baseAddress, &length, input.baseAddress, input.count)
            }
        }
        guard rc == 1 else { throw CryptoError.openSSL("EVP_DigestSign") }
        return Array(signature.prefix(length))
    }

    /// Whether `signature` is a valid Ed25519 signature of `message` by this key (with `digest`, an RSA
    /// PKCS #1 v1.5 signature of its digest). Errors count as invalid.
    func verify(_ signature: [UInt8], for message: [UInt8], digest: OpaquePointer? = nil) -> Bool {
        guard digest != nil || signature.count == 64, !signature.isEmpty else { return false }
        guard let context = EVP_MD_CTX_new() else {
            CryptoError.drainOpenSSLErrors()
            return false
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest, nil, pointer) == 1 else {
            CryptoError.drainOpenSSLErrors()
            return false
        }
        let rc = message.withUnsafeBufferPointer { input in
            signature.withUnsafeBufferPointer { sig in
                EVP_DigestVerify(context, sig.baseAddress, sig.count, input.baseAddress, input.count)
            }
        }
        if rc != 1 { CryptoError.drainOpenSSLErrors() }  // a bad signature leaves a reason on the queue
        return rc == 1
    }
}
