import CountLimitedCache
import Foundation
import RPCAccess
import RPCCore
import Synchronization
import YediCrypto
import YediSync

/// Verifies each distinct access token once, then serves its claims from a count-limited cache.
///
/// A signature check costs 250–370 µs, and every call of a signed-in user carries the same token for its
/// whole life (a service calling on a user's behalf carries it again), so most verifications repeat.
/// The cache is keyed by the SHA-256 of the token's bytes (a value: a hit allocates nothing): a tampered token is another key, a miss, and
/// is verified in full. Failures are never cached. Every hit checks expiry again against the injected
/// clock and asks `revocations`, so neither an expired token nor a revoked user is served from the
/// cache. A miss is verified off the connection's event loop, so a flood of bad tokens cannot stall the
/// other calls of that loop. Changing the keys (`replaceKeys`) empties the cache.
///
/// The interceptor's path (`knownCaller(bearerToken:on:)`) first asks the connection's memo of its last
/// token (`ConnectionTokenMemo`), which a client's next call almost always repeats: one comparison
/// instead of the digest and the lookup, with the same checks after it.
public final class CachingTokenVerifier: AccessTokenVerifier, Sendable {
    /// The default number of tokens kept: about one per active user of a busy service.
    public static let defaultCapacity = 10_000

    /// The verifier a miss goes through, and its generation (bumped by `replaceKeys`): a miss verified
    /// with keys that were replaced meanwhile is not cached.
    private let verifier: TSanVisibleMutex<(JWTVerifier, generation: Int)>
    private let cache: LRUCache<SHA256.Digest, AccessTokenClaims>
    private let revocations: (any AccessTokenRevocations)?
    /// The verifier's clock and skew (a key change keeps them): a hit is checked without the lock.
    private let expiry: TokenExpiry
    /// Bumped by `replaceKeys` once the cache is empty: a connection's memo made before no longer matches.
    private let keyEpoch = Atomic<Int>(0)

    public init(
        verifier: JWTVerifier, capacity: Int = defaultCapacity, revocations: (any AccessTokenRevocations)? = nil,
        cache: LRUCache<SHA256.Digest, AccessTokenClaims>? = nil
    ) {
        self.verifier = TSanVisibleMutex((verifier, 0))
        self.expiry = verifier.expiry
        self.cache = cache ?? LRUCache(name: "access-tokens", capacity: capacity)
        self.revocations = revocations
    }

    /// The verifier a miss goes through (its keys, its clock).
    public var current: JWTVerifier { verifier.withLock { $0.0 } }

    public func verify(accessToken: String) async throws -> Caller {
        .user(try await claims(of: accessToken[...]).authenticatedUser)
    }

    public func verify(bearerToken: Substring) async throws -> Caller {
        .user(try await claims(of: bearerToken).authenticatedUser)
    }

    /// A cache hit's caller, at once (the interceptor's path for a signed-in user's every call); nil on a
    /// miss. An expired or revoked token throws.
    public func knownCaller(bearerToken: Substring) throws -> Caller? {
        guard let claims = try cachedClaims(of: bearerToken) else { return nil }
        return try caller(of: claims)
    }

    /// The same, first asking the memo of the last token on the caller's connection, and remembering a
    /// cache hit there for the connection's next call.
    public func knownCaller(bearerToken: Substring, on peer: PeerInfo) throws -> Caller? {
        // Read before the lookup: an entry found under keys replaced meanwhile is remembered as stale.
        let epoch = keyEpoch.load(ordering: .acquiring)
        let memo = peer.connectionState(ConnectionTokenMemo.self) { ConnectionTokenMemo() }
        if let remembered = memo.remembered(bearerToken, verifier: ObjectIdentifier(self), keyEpoch: epoch) {
            guard !expiry.hasExpired(at: remembered.expiresAt) else {
                memo.forget()
                throw JWTVerifier.expired
            }
            try checkNotRevoked(userID: remembered.user.id, issuedAt: remembered.issuedAt)
            return .user(remembered.user)
        }
        guard let claims = try cachedClaims(of: bearerToken) else { return nil }
        memo.remember(bearerToken, claims: claims, verifier: ObjectIdentifier(self), keyEpoch: epoch)
        return try caller(of: claims)
    }

    /// A token `knownCaller` did not find: verified off the event loop and cached, without a second lookup.
    public func verifyUnknown(bearerToken: Substring) async throws -> Caller {
        try caller(of: try await verifyAndCache(bearerToken))
    }

    /// The claims of a valid, unexpired, unrevoked token: from the cache, or verified and then cached.
    public func claims(of token: String) async throws(RPCError) -> AccessTokenClaims {
        try await claims(of: token[...])
    }

    /// The same for a token inside a longer text (the `authorization` metadata): a hit copies nothing.
    ///
    /// Kept small: a hit is answered by synchronous helpers, and the miss's work (a verifier copy, the
    /// hop off the loop) sits in a function of its own, so the frame this allocates per call stays
    /// within the task allocator's slab.
    public func claims(of token: Substring) async throws(RPCError) -> AccessTokenClaims {
        let claims: AccessTokenClaims
        if let cached = try cachedClaims(of: token) {
            claims = cached
        } else {
            claims = try await verifyAndCache(token)
        }
        try checkNotRevoked(claims)
        return claims
    }

    /// The cached claims of `token`, nil on a miss; an expired entry is dropped and refused.
    private func cachedClaims(of token: Substring) throws(RPCError) -> AccessTokenClaims? {
        guard token.utf8.count <= JWTVerifier.maximumTokenSize else {
            return try current.claims(of: String(token))  // refused by the verifier, before any hashing
        }
        let key = SHA256.digest(token.utf8)
        guard let cached = cache.get(key) else { return nil }
        guard !expiry.hasExpired(cached) else {
            _ = cache.remove(key)
            throw JWTVerifier.expired
        }
        return cached
    }

    /// A miss: verified in full off the event loop, then cached unless the keys changed meanwhile.
    private func verifyAndCache(_ token: Substring) async throws(RPCError) -> AccessTokenClaims {
        let (verifier, generation) = self.verifier.withLock { $0 }
        let token = String(token)
        let claims = try await Self.offTheEventLoop { () throws(RPCError) in try verifier.claims(of: token) }
        let key = SHA256.digest(token.utf8)
        // Under the lock `replaceKeys` empties the cache in: claims of replaced keys never land after it.
        self.verifier.withLock { current in
            if current.generation == generation { cache.put(claims, forKey: key) }
        }
        return claims
    }

    /// The user valid, unrevoked claims name.
    private func caller(of claims: AccessTokenClaims) throws(RPCError) -> Caller {
        try checkNotRevoked(claims)
        return .user(claims.authenticatedUser)
    }

    private func checkNotRevoked(_ claims: AccessTokenClaims) throws(RPCError) {
        try checkNotRevoked(userID: claims.userID, issuedAt: claims.issuedAt)
    }

    private func checkNotRevoked(userID: String, issuedAt: Date) throws(RPCError) {
        if let revocations, revocations.isRevoked(userID: userID, issuedAt: issuedAt) {
            throw RPCError(code: .unauthenticated, message: "this account's sign-ins were revoked")
        }
    }

    /// Trusts `keys` from now on (a rotation or a removed key); every cached token is verified again.
    public func replaceKeys(_ keys: [TokenVerificationKey]) {
        verifier.withLock { current in
            current = (current.0.withKeys(keys), current.generation + 1)
            cache.removeAll()
        }
        keyEpoch.add(1, ordering: .releasing)
    }

    /// Runs `work` on the global concurrent executor rather than on the calling task's executor (a
    /// connection's event loop). `@concurrent`: this module's functions otherwise run on their caller's
    /// executor, and this one is where a call leaves it.
    @concurrent private static func offTheEventLoop<T: Sendable>(_ work: @Sendable () throws(RPCError) -> T)
        async throws(RPCError)
        -> T
    {
        let result: Result<T, RPCError> = await withTaskExecutorPreference(globalConcurrentExecutor) {
            do throws(RPCError) {
                return .success(try work())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}
