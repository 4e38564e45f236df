extension PasswordHasher {
    /// scrypt's cost (RFC 7914) and the sizes of salt and hash.
    ///
    /// Memory is `128 * r * 2^logN` bytes and time grows with `2^logN * r * p`; every hash stores its own
    /// parameters, so raising them later only affects new hashes (and `needsRehash` flags old ones).
    public struct Parameters: Sendable, Hashable, CustomStringConvertible {
        /// log2 of N, the CPU/memory cost.
        public var logN: Int
        /// The block size factor.
        public var r: Int
        /// The parallelization factor (computed sequentially here: it only multiplies time).
        public var p: Int
        public var saltLength: Int
        public var keyLength: Int

        public init(logN: Int, r: Int, p: Int, saltLength: Int = 16, keyLength: Int = 32) {
            self.logN = logN
            self.r = r
            self.p = p
            self.saltLength = saltLength
            self.keyLength = keyLength
        }

        /// Production: N = 2^15, r = 8, p = 1: 32 MiB and about 170 ms per hash on the 2-core dev machine
        /// under load (OpenSSL's scrypt; 2^14 would halve it). OWASP's scrypt minimum is N = 2^17 with
        /// r = 8 at 128 MiB; 2^15 keeps the KDF pool's concurrent derivations within a few hundred MiB.
        public static let `default` = Parameters(logN: 15, r: 8, p: 1)

        /// Cheap (N = 2^10, 1 MiB) for tests only: never store user passwords with these.
        public static let fastForTests = Parameters(logN: 10, r: 8, p: 1)

        /// The most a stored hash may ask for: a corrupted or hostile row must not make a sign-in
        /// allocate gigabytes or spin for minutes.
        static let maximumMemory = 256 << 20
        static let maximumLogN = 20
        static let maximumR = 32
        static let maximumP = 16
        static let saltLengths = 8...64
        static let keyLengths = 16...64

        /// The bytes scrypt allocates for these parameters (B and V; OpenSSL's `maxmem` must cover them).
        var memoryBytes: Int { 128 * r * p + 128 * r * ((1 << logN) + 2) }

        /// Nil when the parameters are within the limits above, otherwise why not.
        var problem: String? {
            guard (1...Self.maximumLogN).contains(logN) else { return "ln must be 1...\(Self.maximumLogN)" }
            guard (1...Self.maximumR).contains(r) else { return "r must be 1...\(Self.maximumR)" }
            guard (1...Self.maximumP).contains(p) else { return "p must be 1...\(Self.maximumP)" }
            guard Self.saltLengths.contains(saltLength) else { return "the salt must be 8...64 bytes" }
            guard Self.keyLengths.contains(keyLength) else { return "the hash must be 16...64 bytes" }
            guard memoryBytes <= Self.maximumMemory else { return "the parameters need more than 256 MiB" }
            return nil
        }

        /// True when `self` is at least as strong as `other` in every dimension.
        func isAtLeast(_ other: Parameters) -> Bool {
            logN >= other.logN && r >= other.r && p >= other.p && saltLength >= other.saltLength
                && keyLength >= other.keyLength
        }

        public var description: String {
            "scrypt(ln=\(logN), r=\(r), p=\(p), salt \(saltLength) B, key \(keyLength) B)"
        }
    }
}
