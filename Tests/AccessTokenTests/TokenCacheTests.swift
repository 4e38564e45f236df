import AccessTokens
import CountLimitedCache
import Foundation
import RPCAccess
import RPCCore
import Synchronization
import XCTest
import YediCrypto

/// `CachingTokenVerifier`: each distinct token verified once; expiry, keys and revocations still hold on
/// every hit; nothing that failed is remembered.
final class TokenCacheTests: XCTestCase {
    private let signingKey = TokenSigningKey(privateKey: .generate())
    private let clock = TestClock()

    private func verifier(revocations: (any AccessTokenRevocations)? = nil) -> (
        CachingTokenVerifier, LRUCache<SHA256.Digest, AccessTokenClaims>
    ) {
        let cache = LRUCache<SHA256.Digest, AccessTokenClaims>(name: "test-tokens", capacity: 16)
        let jwt = JWTVerifier(keys: [signingKey.verificationKey], now: clock.function)
        return (CachingTokenVerifier(verifier: jwt, revocations: revocations, cache: cache), cache)
    }

    private func token(_ user: String = "u-1", lifetime: Duration = .seconds(900)) throws -> String {
        try AccessTokenIssuer(signingKey: signingKey, lifetime: lifetime, now: clock.function)
            .issue(userID: user, role: .customer, sessionID: "s-1").token
    }

    func testTokenCacheHitServesTheClaimsWithoutVerifyingAgain() async throws {
        let (verifier, cache) = verifier()
        let token = try token()
        let first = try await verifier.claims(of: token)
        XCTAssertEqual(cache.statistics.misses, 1)
        for _ in 0..<5 {
            let again = try await verifier.claims(of: token)
            XCTAssertEqual(again, first)
        }
        XCTAssertEqual(cache.statistics.hits, 5, "the later uses were served from the cache")
        XCTAssertEqual(cache.statistics.misses, 1, "verified once")
    }

    func testTokenCacheRefusesAnExpiredTokenEvenWhenCached() async throws {
        let (verifier, _) = verifier()
        let token = try token(lifetime: .seconds(60))
        _ = try await verifier.claims(of: token)
        clock.now += 120
        await assertUnauthenticated(verifier, token, containing: "expired")
    }

    /// A hit allows the verifier's clock skew (30 s) past expiry, no more, also after a key change (which
    /// keeps the clock and skew).
    func testTokenCacheHitsAllowTheClockSkewAndNoMoreAlsoAfterAKeyChange() async throws {
        let (verifier, cache) = verifier()
        let start = clock.now
        for keysChanged in [false, true] {
            clock.now = start
            let token = try token(lifetime: .seconds(60))
            _ = try await verifier.claims(of: token)
            if keysChanged {
                verifier.replaceKeys([signingKey.verificationKey])
                _ = try await verifier.claims(of: token)
            }
            clock.now = start + 60 + 20
            let hitsBefore = cache.statistics.hits
            XCTAssertNotNil(
                try verifier.knownCaller(bearerToken: token[...]), "within the skew (keys changed: \(keysChanged))")
            XCTAssertEqual(cache.statistics.hits, hitsBefore + 1, "served from the cache")
            clock.now = start + 60 + 40
            XCTAssertThrowsError(try verifier.knownCaller(bearerToken: token[...]), "past the skew") { error in
                XCTAssertTrue((error as? RPCError)?.message.contains("expired") ?? false, "\(error)")
            }
        }
    }

    func testTokenCacheRefusesATokenOfARemovedKeyAfterTheKeyChange() async throws {
        let (verifier, cache) = verifier()
        let token = try token()
        _ = try await verifier.claims(of: token)
        let other = TokenSigningKey(privateKey: .generate())
        verifier.replaceKeys([other.verificationKey])
        XCTAssertEqual(cache.count, 0, "the cache is emptied with the keys")
        await assertUnauthenticated(verifier, token, containing: "unknown signing key")
    }

    func testTokenCacheNeverServesATamperedToken() async throws {
        let (verifier, _) = verifier()
        let token = try token()
        _ = try await verifier.claims(of: token)
        var parts = token.split(separator: ".").map(String.init)
        let claims = String(decoding: Base64URL.decode(parts[1]) ?? [], as: UTF8.self)
            .replacingOccurrences(of: "\"customer\"", with: "\"designer\"")
        parts[1] = Base64URL.encode(Array(claims.utf8))
        await assertUnauthenticated(verifier, parts.joined(separator: "."), containing: "signature")
    }

    func testTokenCacheKeepsNoFailure() async throws {
        let (verifier, cache) = verifier()
        for _ in 0..<3 { await assertUnauthenticated(verifier, "a.b.c", containing: "malformed") }
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(cache.statistics.hits, 0)
    }

    func testTokenCacheRefusesARevokedUserOnAHitAtOnce() async throws {
        let revoked = Revoked()
        let (verifier, _) = verifier(revocations: revoked)
        let gone = try token("u-gone")
        _ = try await verifier.claims(of: gone)
        revoked.revoke("u-gone", at: clock.now)
        await assertUnauthenticated(verifier, gone, containing: "revoked")
        _ = try await verifier.claims(of: try token("u-stays"))
        // A token issued after the revocation instant is not revoked by it.
        clock.now += 10
        _ = try await verifier.claims(of: try token("u-gone"))
    }

    /// The interceptor's synchronous path (`knownCaller`): nil on a miss (the async `verify` goes next),
    /// the user on a hit, and on a hit an expired or revoked token is refused just the same.
    func testTokenCacheKnownCallerAnswersHitsAtOnceAndRefusesExpiredOrRevokedOnes() async throws {
        let revoked = Revoked()
        let (verifier, cache) = verifier(revocations: revoked)
        let first = try token(lifetime: .seconds(60))
        XCTAssertNil(try verifier.knownCaller(bearerToken: first[...]), "a miss: not known yet")
        XCTAssertEqual(cache.count, 0, "a miss is not verified on this path")
        _ = try await verifier.verify(bearerToken: first[...])
        guard case .user(let user)? = try verifier.knownCaller(bearerToken: first[...]) else {
            return XCTFail("a hit did not name the user")
        }
        XCTAssertEqual(user.id, "u-1")
        revoked.revoke("u-1", at: clock.now)
        XCTAssertThrowsError(try verifier.knownCaller(bearerToken: first[...])) { error in
            XCTAssertEqual((error as? RPCError)?.code, .unauthenticated)
        }
        let other = try token("u-2", lifetime: .seconds(60))
        _ = try await verifier.verify(bearerToken: other[...])
        clock.now += 120
        XCTAssertThrowsError(try verifier.knownCaller(bearerToken: other[...])) { error in
            XCTAssertTrue((error as? RPCError)?.message.contains("expired") ?? false, "\(error)")
        }
    }

    /// The connection's memo (`knownCaller(bearerToken:on:)`): a repeated token is answered without a
    /// cache lookup, and only on its own connection.
    func testTokenCacheConnectionMemoAnswersARepeatedTokenWithoutALookup() async throws {
        let (verifier, cache) = verifier()
        let token = try token()
        let connection = PeerInfo(address: "one")
        let another = PeerInfo(address: "two")
        XCTAssertNil(try verifier.knownCaller(bearerToken: token[...], on: connection), "not verified yet")
        _ = try await verifier.verifyUnknown(bearerToken: token[...])
        for _ in 0..<4 {
            guard case .user(let user)? = try verifier.knownCaller(bearerToken: token[...], on: connection) else {
                return XCTFail("a known token was not answered")
            }
            XCTAssertEqual(user.id, "u-1")
        }
        XCTAssertEqual(cache.statistics.hits, 1, "after the first hit, the memo answered")
        _ = try verifier.knownCaller(bearerToken: token[...], on: another)
        XCTAssertEqual(cache.statistics.hits, 2, "another connection has its own memo")
    }

    /// The memo trusts no more than a hit: expiry and revocation are checked on every call, and a key
    /// change makes it stale.
    func testTokenCacheConnectionMemoStillChecksExpiryRevocationAndKeys() async throws {
        let revoked = Revoked()
        let (verifier, _) = verifier(revocations: revoked)
        let connection = PeerInfo(address: "one")
        func remembered(_ token: String) async throws {
            _ = try await verifier.verifyUnknown(bearerToken: token[...])
            XCTAssertNotNil(try verifier.knownCaller(bearerToken: token[...], on: connection))
            XCTAssertNotNil(try verifier.knownCaller(bearerToken: token[...], on: connection))
        }
        let expiring = try token(lifetime: .seconds(60))
        try await remembered(expiring)
        clock.now += 120
        XCTAssertThrowsError(try verifier.knownCaller(bearerToken: expiring[...], on: connection)) { error in
            XCTAssertTrue((error as? RPCError)?.message.contains("expired") ?? false, "\(error)")
        }

        let gone = try token("u-gone")
        try await remembered(gone)
        revoked.revoke("u-gone", at: clock.now)
        XCTAssertThrowsError(try verifier.knownCaller(bearerToken: gone[...], on: connection)) { error in
            XCTAssertTrue((error as? RPCError)?.message.contains("revoked") ?? false, "\(error)")
        }

        let signed = try token("u-keys")
        try await remembered(signed)
        verifier.replaceKeys([TokenSigningKey(privateKey: .generate()).verificationKey])
        XCTAssertNil(
            try verifier.knownCaller(bearerToken: signed[...], on: connection), "a key change: the memo is stale")
        do {
            _ = try await verifier.verifyUnknown(bearerToken: signed[...])
            XCTFail("a token signed with a removed key was accepted")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unauthenticated)
        }
    }

    /// Another token on the same connection, tampered or another user's, is never answered with the
    /// remembered claims.
    func testTokenCacheConnectionMemoNeverServesAnotherToken() async throws {
        let (verifier, _) = verifier()
        let connection = PeerInfo(address: "one")
        let token = try token("u-1")
        _ = try await verifier.verifyUnknown(bearerToken: token[...])
        XCTAssertNotNil(try verifier.knownCaller(bearerToken: token[...], on: connection))

        var bytes = Array(token.utf8)
        bytes[bytes.count - 2] = bytes[bytes.count - 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let tampered = String(decoding: bytes, as: UTF8.self)
        XCTAssertNil(try verifier.knownCaller(bearerToken: tampered[...], on: connection), "tampered: a miss")
        do {
            _ = try await verifier.verifyUnknown(bearerToken: tampered[...])
            XCTFail("a tampered token was accepted")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unauthenticated)
        }

        let other = try self.token("u-2")
        XCTAssertNil(try verifier.knownCaller(bearerToken: other[...], on: connection), "another user's: a miss")
        _ = try await verifier.verifyUnknown(bearerToken: other[...])
        for expected in ["u-2", "u-1", "u-1", "u-2"] {
            let source = expected == "u-1" ? token : other
            guard case .user(let user)? = try verifier.knownCaller(bearerToken: source[...], on: connection) else {
                return XCTFail("a known token was not answered")
            }
            XCTAssertEqual(user.id, expected)
        }
    }

    private func assertUnauthenticated(
        _ verifier: CachingTokenVerifier, _ token: String, containing text: String,
        file: StaticString = #filePath, line: UInt = #line
    ) async {
        do {
            _ = try await verifier.claims(of: token)
            XCTFail("the token was accepted", file: file, line: line)
        } catch {
            XCTAssertEqual(error.code, .unauthenticated, file: file, line: line)
            XCTAssertTrue(error.message.contains(text), error.message, file: file, line: line)
        }
    }
}

/// Revocations a test sets by hand.
private final class Revoked: AccessTokenRevocations {
    private let revokedAt = Mutex<[String: Date]>([:])

    func revoke(_ user: String, at instant: Date) { revokedAt.withLock { $0[user] = instant } }

    func isRevoked(userID: String, issuedAt: Date) -> Bool {
        revokedAt.withLock { $0[userID].map { issuedAt <= $0 } ?? false }
    }
}
