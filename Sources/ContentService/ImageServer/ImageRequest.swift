/// What an image URL asks for, parsed strictly: `/images/<64 lowercase hex>.jpg`, optionally followed by
/// exactly `?expires=<digits>&signature=<43 base64url characters>`. Nothing else names a file, so no
/// path can leave the variant folder (no dots, slashes or escapes get through).
enum ImageRequest: Equatable {
    /// Not an image URL: 404.
    case notFound
    /// An image URL whose query is not a well-formed signature: 403.
    case malformedSignature
    case image(sha256: String, signature: Signature?)

    struct Signature: Equatable {
        var expires: Int64
        var value: String
    }

    init(uri: String) {
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts[0]
        guard path.hasPrefix(ImageURLs.pathPrefix), path.hasSuffix(ImageURLs.pathSuffix) else {
            self = .notFound
            return
        }
        let name = path.dropFirst(ImageURLs.pathPrefix.count).dropLast(ImageURLs.pathSuffix.count)
        guard name.utf8.count == 64, name.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else {
            self = .notFound
            return
        }
        guard parts.count == 2 else {
            self = .image(sha256: String(name), signature: nil)
            return
        }
        guard let signature = Self.signature(parts[1]) else {
            self = .malformedSignature
            return
        }
        self = .image(sha256: String(name), signature: signature)
    }

    private static func signature(_ query: Substring) -> Signature? {
        let fields = query.split(separator: "&", omittingEmptySubsequences: false)
        guard fields.count == 2, fields[0].hasPrefix("expires="), fields[1].hasPrefix("signature=") else { return nil }
        let expires = fields[0].dropFirst("expires=".count)
        let value = fields[1].dropFirst("signature=".count)
        guard (1...12).contains(expires.utf8.count), expires.utf8.allSatisfy({ (48...57).contains($0) }),
            let seconds = Int64(expires), value.utf8.count == 43,
            value.utf8.allSatisfy({ Self.isBase64URL($0) })
        else { return nil }
        return Signature(expires: seconds, value: String(value))
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 45 || byte == 95
    }
}
