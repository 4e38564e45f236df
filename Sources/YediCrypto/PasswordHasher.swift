/// Hashes and verifies user passwords with scrypt.
///
/// Hashes are self-describing strings, `$scrypt$ln=15,r=8,p=1$<salt>$<hash>` (salt and hash in unpadded
/// base64url), so each stored row keeps the cost it was made with: raising `Parameters.default` later
/// still verifies old rows, and `needsRehash` says which to re-hash at the next successful sign-in.
///
/// The KDF never runs on the caller's thread (an event loop): `hash` and `verify` hop to
/// `KDFThreadPool`, which also bounds how many 32 MiB derivations run at once and how many may wait.
/// Callers name whose work it is (`key`, the client address) and when they stop waiting (`deadline`), so
/// the pool can share its threads fairly and drop work nobody waits for (`KDFQueueError`).
public struct PasswordHasher: Sendable {
    public let parameters: Parameters

    /// - Precondition: `parameters` are within the limits stored hashes are held to.
    public init(parameters: Parameters = .default) {
        if let problem = parameters.problem { preconditionFailure("PasswordHasher: \(problem)") }
        self.parameters = parameters
    }

    /// A new encoded hash of `password` with a fresh random salt.
    public func hash(
        _ password: String, key: String = "", deadline: ContinuousClock.Instant? = nil
    ) async throws -> String {
        let hasher = self
        return try await KDFThreadPool.shared.run(key: key, deadline: deadline) { try hasher.hashSync(password) }
    }

    /// True when `password` is the one `encoded` was made from. Throws `CryptoError` when `encoded` is
    /// not a hash this type reads (malformed, another algorithm, parameters beyond the limits), and
    /// `KDFQueueError` when the work was refused or dropped (queue full, caller gone).
    public func verify(
        _ password: String, against encoded: String, key: String = "", deadline: ContinuousClock.Instant? = nil
    ) async throws -> Bool {
        let hash = try EncodedPasswordHash(parsing: encoded)
        return try await KDFThreadPool.shared.run(key: key, deadline: deadline) {
            try Self.verifySync(password, against: hash)
        }
    }

    /// True when `encoded` was made with weaker parameters than this hasher's (or cannot be read), so
    /// the password should be hashed again once the user has proven it.
    public func needsRehash(_ encoded: String) -> Bool {
        guard let hash = try? EncodedPasswordHash(parsing: encoded) else { return true }
        return !hash.parameters.isAtLeast(parameters)
    }

    // MARK: Synchronous forms (tests and benchmarks; they block the calling thread for the whole KDF)

    /// `hash`, on the calling thread.
    public func hashSync(_ password: String) throws(CryptoError) -> String {
        let salt = SecureRandom.bytes(parameters.saltLength)
        let key = try Scrypt.deriveKey(password: Array(password.utf8), salt: salt, parameters: parameters)
        return EncodedPasswordHash(parameters: parameters, salt: salt, hash: key).encoded
    }

    /// `verify`, on the calling thread.
    public func verifySync(_ password: String, against encoded: String) throws(CryptoError) -> Bool {
        try Self.verifySync(password, against: EncodedPasswordHash(parsing: encoded))
    }

    private static func verifySync(_ password: String, against hash: EncodedPasswordHash) throws(CryptoError) -> Bool {
        let key = try Scrypt.deriveKey(password: Array(password.utf8), salt: hash.salt, parameters: hash.parameters)
        return ConstantTime.equals(key, hash.hash)
    }
}
