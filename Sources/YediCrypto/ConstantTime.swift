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

    /// True when two texts have the same UTF-8 bytes; every byte is compared whatever differs first
    /// (different lengths return false at once). For a token checked on every call: eight bytes a step,
    /// where `CRYPTO_memcmp` goes byte by byte.
    public static func equals(_ a: Substring, _ b: String) -> Bool {
        let done = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right in
                equals(UnsafeRawBufferPointer(left), UnsafeRawBufferPointer(right))
            }
        }
        if case .some(.some(let equal)) = done { return equal }
        return Array(a.utf8).withUnsafeBytes { left in
            Array(b.utf8).withUnsafeBytes { right in equals(left, right) }
        }
    }

    /// The same over memory.
    public static func equals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt64 = 0
        var offset = 0
        while offset + 8 <= a.count {
            difference |=
                a.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                ^ b.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        while offset < a.count {
            difference |= UInt64(a[offset] ^ b[offset])
            offset += 1
        }
        return difference == 0
    }
}
