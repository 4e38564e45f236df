import COpenSSL

/// SHA-256 (FIPS 180-4) through OpenSSL's one-shot `EVP_Digest`.
public enum SHA256 {
    /// The length of a digest in bytes.
    public static let byteCount = 32

    public static func hash(_ data: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let rc = data.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        // SHA-256 over memory cannot fail short of a broken libcrypto; a wrong digest must never escape.
        guard rc == 1, length == byteCount else {
            fatalError("EVP_Digest(SHA-256) failed: \(CryptoError.openSSL("EVP_Digest"))")
        }
        return Array(digest.prefix(byteCount))
    }

    /// The digest of the text's UTF-8 bytes.
    public static func hash(_ text: String) -> [UInt8] {
        hash(Array(text.utf8))
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
