import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's DRBG (seeded by the kernel).
public enum SecureRandom {
    /// `count` random bytes. Traps if OpenSSL cannot produce them: that means a broken system (no
    /// entropy source), and carrying on with predictable salts or keys would be far worse than stopping.
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "SecureRandom.bytes: negative count")
        guard count > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let rc = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        guard rc == 1 else {
            fatalError(
                "RAND_bytes failed, the system cannot produce random bytes: \(CryptoError.openSSL("RAND_bytes"))")
        }
        return bytes
    }
}
