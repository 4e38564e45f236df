import COpenSSL

/// Comparisons whose timing does not depend on where secret bytes differ.
public enum ConstantTime {
    /// True when `a` and `b` are byte-for-byte equal. Lengths are not secret (they are fixed by the
    /// algorithm), so different lengths return false at once; equal lengths compare with `CRYPTO_memcmp`.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { left in
            b.withUnsafeBytes { right in
                CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0
            }
        }
    }
}
