import YediCrypto

/// Signs and checks the URLs of images that are not public: HMAC-SHA256 of the image's name and the
/// expiry, with the service's image URL key (`--image-url-key`, else `<data>/image-url.key`). Whoever has
/// such a URL can load the image until it expires; changing the name or the expiry breaks the signature.
struct ImageURLSigner: Sendable {
    private let key: [UInt8]

    init(key: [UInt8]) {
        self.key = key
    }

    /// base64url without padding: 43 characters.
    func signature(sha256: String, expires: Int64) -> String {
        Base64URL.encode(mac(sha256: sha256, expires: expires))
    }

    /// Compared in constant time: timing does not tell how much of a forged signature was right.
    func isValid(_ signature: String, sha256: String, expires: Int64) -> Bool {
        guard let given = Base64URL.decode(signature) else { return false }
        return ConstantTime.equals(given, mac(sha256: sha256, expires: expires))
    }

    /// Versioned and separated, so no other message signed with this key reads as a URL's.
    private func mac(sha256: String, expires: Int64) -> [UInt8] {
        HMACSHA256.mac(key: key, Array("yedi image url v1\n\(sha256)\n\(expires)".utf8))
    }
}
