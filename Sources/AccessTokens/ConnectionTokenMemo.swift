import Foundation
import ProtoBridge
import RPCAccess
import RPCCore
import YediSync

/// The token a connection's last signed-in call carried, with its claims.
///
/// A client sends its token on every call, so the next call on the connection most likely carries the
/// same one: recognised by one comparison of its bytes, it needs neither a SHA-256 of them nor a lookup
/// in the shared cache. Kept per connection (`PeerInfo.connectionState`), so it ends with the connection.
///
/// It remembers only what the cache had just served, and no more is trusted on a match than on a cache
/// hit: expiry and revocation are checked again on every call, and an entry made under other keys (or by
/// another verifier) does not match. The comparison takes the same time however much of the token
/// matches, since the remembered one may be another user's (a gateway's connection).
final class ConnectionTokenMemo: Sendable {
    private struct Entry {
        /// The token as the call carried it: a slice of its `authorization` string, kept without a copy
        /// (a connection whose calls alternate between users replaces the entry on every call).
        let token: Substring
        /// The claims' user (with the issue time a revocation is checked against), made once: a call
        /// gets it without copying each of the claims' fields into a new one.
        let user: AuthenticatedUser
        let issuedAt: Date
        let expiresAt: Date
        /// The verifier that made the entry, and its key epoch then (`CachingTokenVerifier.replaceKeys`).
        /// An identifier can be reused once its verifier is freed; a server keeps one verifier for the
        /// life of its connections, so no memo outlives the verifier that made it.
        let verifier: ObjectIdentifier
        let keyEpoch: Int
    }

    private let last = TSanVisibleMutex<Entry?>(nil)

    /// The remembered user, issue time and expiry when `token` is the remembered token, from the same verifier and
    /// key epoch.
    func remembered(_ token: Substring, verifier: ObjectIdentifier, keyEpoch: Int) -> (
        user: AuthenticatedUser, issuedAt: Date, expiresAt: Date
    )? {
        last.withLock { entry in
            guard let entry, entry.verifier == verifier, entry.keyEpoch == keyEpoch,
                Self.sameBytes(token, entry.token)
            else { return nil }
            return (entry.user, entry.issuedAt, entry.expiresAt)
        }
    }

    /// Every byte compared, whatever differs first (`SameBytes`, the codec's comparison of a frame's
    /// strings with the previous frame's, for the same reason).
    private static func sameBytes(_ token: Substring, _ remembered: Substring) -> Bool {
        let compared = token.utf8.withContiguousStorageIfAvailable { token in
            remembered.utf8.withContiguousStorageIfAvailable { remembered in
                SameBytes.equal(UnsafeRawBufferPointer(token), UnsafeRawBufferPointer(remembered))
            }
        }
        if case .some(.some(let equal)) = compared { return equal }
        return SameBytes.equal(String(token), String(remembered))
    }

    func remember(_ token: Substring, claims: AccessTokenClaims, verifier: ObjectIdentifier, keyEpoch: Int) {
        let entry = Entry(
            token: token, user: claims.authenticatedUser, issuedAt: claims.issuedAt, expiresAt: claims.expiresAt,
            verifier: verifier, keyEpoch: keyEpoch)
        last.withLock { $0 = entry }
    }

    func forget() {
        last.withLock { $0 = nil }
    }
}
