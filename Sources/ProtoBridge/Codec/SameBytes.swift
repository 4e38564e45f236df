/// Whether two runs of bytes are equal, comparing every byte whatever differs first: a frame's strings
/// are compared with the connection's previous ones on every call, and the previous one may be another
/// caller's token (a gateway's connection), so how long it takes must not say how much matched. Eight
/// bytes a step. (YediCrypto's `ConstantTime` sits above this codec, with OpenSSL; hence one here.)
package enum SameBytes {
    package static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
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

    /// The same for a string's UTF-8 bytes, in place where they are contiguous (a native string's are).
    package static func equal(_ string: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        let utf8 = string.utf8
        guard utf8.count == bytes.count else { return false }
        return utf8.withContiguousStorageIfAvailable { equal(UnsafeRawBufferPointer($0), bytes) }
            ?? Array(utf8).withUnsafeBytes { equal($0, bytes) }
    }

    package static func equal(_ a: String, _ b: String) -> Bool {
        let utf8 = b.utf8
        guard a.utf8.count == utf8.count else { return false }
        return utf8.withContiguousStorageIfAvailable { equal(a, UnsafeRawBufferPointer($0)) }
            ?? Array(utf8).withUnsafeBytes { equal(a, $0) }
    }
}
