import AccessTokens
import Foundation
import RPCAccess
import RPCCore
import YediCrypto
import YediSync

/// The users of this process's service whose access tokens no longer count (deleted accounts; later,
/// suspended ones), consulted by the token verifier on every authenticated call.
///
/// Kept in the service's own database (`runtime_revoked_user`, so a restart keeps it) and in memory (the
/// check is a dictionary lookup on the call path). AccountService writes it in the transaction that
/// deletes the account and sends `yedi.runtime.Revocations/RevokeUser` to every peer through its outbox;
/// the peers write it when that arrives. A row is kept until every token it revokes has expired, and
/// holds a digest of the user id rather than the id: once the purge has run, no data file of any service
/// names a deleted user.
public final class RevokedUsers: AccessTokenRevocations, RevocationLookup, Sendable {
    /// How long a revocation is kept: far longer than an access token lives (15 minutes).
    public static let retention: Duration = .seconds(24 * 3_600)

    private struct Entry {
        var revokedAtMilliseconds: Int64
        var keepUntilMilliseconds: Int64
    }

    private let entries: TSanVisibleMutex<[String: Entry]>
    let clock: any WallClock

    /// The engine's extension (`Storage/RevokedUsers+SQLite.swift`) loads `entries` from the database.
    init(entries: [String: (revokedAt: Int64, keepUntil: Int64)], clock: any WallClock) {
        self.entries = TSanVisibleMutex(
            entries.mapValues { Entry(revokedAtMilliseconds: $0.revokedAt, keepUntilMilliseconds: $0.keepUntil) })
        self.clock = clock
    }

    public func isRevoked(userID: String, issuedAt: Date) -> Bool {
        let digest = Self.digest(userID)
        guard let entry = entries.withLock({ $0[digest] }) else { return false }
        return Int64((issuedAt.timeIntervalSince1970 * 1_000).rounded(.down)) <= entry.revokedAtMilliseconds
    }

    public func isRevoked(_ user: AuthenticatedUser) -> Bool {
        guard let issuedAt = user.issuedAt else { return entries.withLock { $0[Self.digest(user.id)] != nil } }
        return isRevoked(userID: user.id, issuedAt: issuedAt)
    }

    /// Takes a committed revocation into memory (repeating one keeps the latest instants) and forgets
    /// what is past its retention at `now`.
    func remember(digest: String, revokedAt: Int64, keepUntil: Int64, now: Int64) {
        remember([(digest, revokedAt, keepUntil)], now: now)
    }

    /// Takes committed revocations into memory and forgets what is past its retention at `now`; answers
    /// how many were news (a user not revoked here yet, or revoked again later).
    @discardableResult
    func remember(_ rows: [(digest: String, revokedAt: Int64, keepUntil: Int64)], now: Int64) -> Int {
        entries.withLock { entries in
            var news = 0
            for (digest, revokedAt, keepUntil) in rows {
                let known = entries[digest]
                if known.map({ $0.revokedAtMilliseconds < revokedAt }) ?? true { news += 1 }
                entries[digest] = Entry(
                    revokedAtMilliseconds: max(known?.revokedAtMilliseconds ?? revokedAt, revokedAt),
                    keepUntilMilliseconds: max(known?.keepUntilMilliseconds ?? keepUntil, keepUntil))
            }
            entries = entries.filter { $0.value.keepUntilMilliseconds > now }
            return news
        }
    }

    /// How a user id is kept: hex SHA-256 of a domain prefix and the id.
    static func digest(_ userID: String) -> String {
        SHA256.hex(SHA256.hash("yedi.revoked-user:" + userID))
    }
}

extension Duration {
    /// Whole milliseconds.
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}
