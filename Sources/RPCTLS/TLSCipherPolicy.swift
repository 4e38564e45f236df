/// The one cipher policy every Yedi connection uses: forward secrecy and AEAD only.
///
/// Fixed rather than configurable, so a typo in a config file can't quietly weaken a service.
enum TLSCipherPolicy {
    /// TLS 1.2 (OpenSSL names): ECDHE key exchange with AES-GCM or ChaCha20-Poly1305; nothing else.
    static let tls12CipherList = [
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "ECDHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")

    /// TLS 1.3: the standard suites, AES-128-GCM first (fastest with AES-NI, and strong enough).
    static let tls13CipherSuites = [
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256",
    ].joined(separator: ":")

    /// Key exchange groups, in preference order: X25519 (fast, constant-time), then the NIST curves
    /// every peer has. OpenSSL would otherwise also offer and accept X448, P-521 and finite-field groups.
    static let groups = ["X25519", "P-256", "P-384"].joined(separator: ":")

    /// The largest plaintext one TLS record carries; writes are coalesced up to this size.
    static let maximumRecordPlaintext = 16_384
}
