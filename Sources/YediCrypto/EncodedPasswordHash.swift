/// The stored form of a password hash: `$scrypt$ln=<logN>,r=<r>,p=<p>$<salt>$<hash>`, with salt and hash
/// in unpadded base64url. Parsing is strict and caps the parameters (see `PasswordHasher.Parameters`).
struct EncodedPasswordHash: Sendable, Hashable {
    var parameters: PasswordHasher.Parameters
    var salt: [UInt8]
    var hash: [UInt8]

    init(parameters: PasswordHasher.Parameters, salt: [UInt8], hash: [UInt8]) {
        self.parameters = parameters
        self.salt = salt
        self.hash = hash
    }

    var encoded: String {
        "$scrypt$ln=\(parameters.logN),r=\(parameters.r),p=\(parameters.p)$\(Base64URL.encode(salt))$\(Base64URL.encode(hash))"
    }

    /// Never echoes `text`: it is a secret-derived value from the database.
    init(parsing text: String) throws(CryptoError) {
        let parts = text.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty else {
            throw Self.malformed("expected $scrypt$ln=…,r=…,p=…$salt$hash")
        }
        guard parts[1] == "scrypt" else { throw Self.malformed("not an scrypt hash") }
        var values: [String: Int] = [:]
        for field in parts[2].split(separator: ",", omittingEmptySubsequences: false) {
            let pair = field.split(separator: "=", omittingEmptySubsequences: false)
            // Digits only (at most 4), so no signs, spaces or overflow reach the integer parser.
            guard pair.count == 2, ["ln", "r", "p"].contains(pair[0]), values[String(pair[0])] == nil,
                (1...4).contains(pair[1].count), pair[1].allSatisfy({ $0.isASCII && $0.isNumber }),
                let value = Int(pair[1])
            else { throw Self.malformed("bad parameters") }
            values[String(pair[0])] = value
        }
        guard let logN = values["ln"], let r = values["r"], let p = values["p"] else {
            throw Self.malformed("ln, r and p are required")
        }
        guard let salt = Base64URL.decode(String(parts[3])), let hash = Base64URL.decode(String(parts[4])) else {
            throw Self.malformed("salt and hash must be unpadded base64url")
        }
        let parameters = PasswordHasher.Parameters(
            logN: logN, r: r, p: p, saltLength: salt.count, keyLength: hash.count)
        if let problem = parameters.problem { throw Self.malformed(problem) }
        self.init(parameters: parameters, salt: salt, hash: hash)
    }

    private static func malformed(_ reason: String) -> CryptoError {
        CryptoError("malformed password hash: \(reason)")
    }
}
