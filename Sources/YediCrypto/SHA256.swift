import COpenSSL

/// SHA-256 (FIPS 180-4) through OpenSSL's low-level functions (`yedi_SHA256`: no context on the heap).
public enum SHA256 {
    /// The length of a digest in bytes.
    public static let byteCount = 32

    public static func hash(_ data: [UInt8]) -> [UInt8] {
        let digest = digest(data)
        return withUnsafeBytes(of: digest.words) { Array($0) }
    }

    /// The digest of the text's UTF-8 bytes.
    public static func hash(_ text: String) -> [UInt8] {
        let digest = digest(text.utf8)
        return withUnsafeBytes(of: digest.words) { Array($0) }
    }

    /// A digest as a value (no heap storage), for keys of tables looked up on every call.
    public struct Digest: Hashable, Sendable {
        /// The 32 bytes in order, as four words.
        fileprivate(set) var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

        public static func == (a: Digest, b: Digest) -> Bool {
            a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(words.0)
            hasher.combine(words.1)
            hasher.combine(words.2)
            hasher.combine(words.3)
        }
    }

    /// The digest of `bytes`, computed without allocating when they are contiguous (an array, a native
    /// string's or substring's UTF-8).
    public static func digest(_ bytes: some Sequence<UInt8>) -> Digest {
        var digest = Digest()
        let done: Void? = bytes.withContiguousStorageIfAvailable { input in
            pack(UnsafeRawBufferPointer(input), into: &digest)
        }
        if done == nil {
            let copy = Array(bytes)
            copy.withUnsafeBytes { pack($0, into: &digest) }
        }
        return digest
    }

    private static func pack(_ input: UnsafeRawBufferPointer, into digest: inout Digest) {
        let rc = withUnsafeMutableBytes(of: &digest.words) { output in
            yedi_SHA256(input.baseAddress, input.count, output.bindMemory(to: UInt8.self).baseAddress)
        }
        // SHA-256 over memory cannot fail short of a broken libcrypto; a wrong digest must never escape.
        guard rc == 1 else { fatalError("SHA-256 failed: \(CryptoError.openSSL("SHA256_Final"))") }
    }

    /// Lowercase hexadecimal, as `sha256sum` prints digests.
    public static func hex(_ data: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(data.count * 2)
        for byte in data {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
