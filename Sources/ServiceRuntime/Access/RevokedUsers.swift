import AccessTokens
import Foundation
import GRDB
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
    private let clock: any WallClock

    /// Loads the revocations still in force from `database`, forgetting those past their retention.
    public convenience init(database: ServiceDatabase, clock: any WallClock) async throws {
        let now = clock.nowMilliseconds
        let rows = try await database.write { db in
            try db.execute(sql: "DELETE FROM runtime_revoked_user WHERE keep_until_ms <= ?", arguments: [now])
            return try Row.fetchAll(
                db, sql: "SELECT user_digest, revoked_at_ms, keep_until_ms FROM runtime_revoked_user"
            )
            .map { row -> (String, Int64, Int64) in (row["user_digest"], row["revoked_at_ms"], row["keep_until_ms"]) }
        }
        self.init(rows: rows, clock: clock)
    }

    /// The revocations read from either engine's `runtime_revoked_user`: (digest, revoked at, keep until).
    init(rows: [(String, Int64, Int64)], clock: any WallClock) {
        var entries: [String: Entry] = [:]
        for (digest, revokedAt, keepUntil) in rows {
            entries[digest] = Entry(revokedAtMilliseconds: revokedAt, keepUntilMilliseconds: keepUntil)
        }
        self.entries = TSanVisibleMutex(entries)
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

    /// Revokes the tokens of `userID` issued up to `revokedAt`, inside the caller's write transaction; it
    /// takes effect in memory once that transaction commits. Repeating it keeps the latest instant.
    public func revoke(userID: String, revokedAt: Int64, keepUntil: Int64, in db: Database) throws {
        let digest = Self.digest(userID)
        try db.execute(
            sql: """
                INSERT INTO runtime_revoked_user (user_digest, revoked_at_ms, keep_until_ms) VALUES (?, ?, ?)
                ON CONFLICT (user_digest) DO UPDATE SET
                    revoked_at_ms = max(revoked_at_ms, excluded.revoked_at_ms),
                    keep_until_ms = max(keep_until_ms, excluded.keep_until_ms)
                """,
            arguments: [digest, revokedAt, keepUntil])
        // Forget what is past its retention (measured on the caller's clock, as `revokedAt` is).
        try db.execute(sql: "DELETE FROM runtime_revoked_user WHERE keep_until_ms <= ?", arguments: [revokedAt])
        db.afterNextTransaction { _ in self.remember(digest: digest, revokedAt: revokedAt, keepUntil: keepUntil) }
    }

    /// What a committed revocation changes in memory (either engine): the latest instant is kept, and what
    /// is past its retention (on the revoking caller's clock) forgotten.
    func remember(digest: String, revokedAt: Int64, keepUntil: Int64) {
        entries.withLock { entries in
            var entry = entries[digest] ?? Entry(revokedAtMilliseconds: revokedAt, keepUntilMilliseconds: keepUntil)
            entry.revokedAtMilliseconds = max(entry.revokedAtMilliseconds, revokedAt)
            entry.keepUntilMilliseconds = max(entry.keepUntilMilliseconds, keepUntil)
            entries[digest] = entry
            entries = entries.filter { $0.value.keepUntilMilliseconds > revokedAt }
        }
    }

    /// How a user id is kept: hex SHA-256 of a domain prefix and the id.
    static func digest(_ userID: String) -> String {
        SHA256.hex(SHA256.hash("yedi.revoked-user:" + userID))
    }

    /// The revocation of `userID` from now on, for `retention`.
    public func revokeNow(userID: String, in db: Database) throws {
        let now = clock.nowMilliseconds
        try revoke(userID: userID, revokedAt: now, keepUntil: now + Self.retention.wholeMilliseconds, in: db)
    }
}

extension Duration {
    /// Whole milliseconds.
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}
