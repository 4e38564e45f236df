import GRDB

/// `RevokedUsers` kept in the service's SQLite database (`runtime_revoked_user`).
extension RevokedUsers {
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
        var entries: [String: (revokedAt: Int64, keepUntil: Int64)] = [:]
        for (digest, revokedAt, keepUntil) in rows { entries[digest] = (revokedAt, keepUntil) }
        self.init(entries: entries, clock: clock)
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
        db.afterNextTransaction { _ in
            self.remember(digest: digest, revokedAt: revokedAt, keepUntil: keepUntil, now: revokedAt)
        }
    }

    /// The revocation of `userID` from now on, for `retention`.
    public func revokeNow(userID: String, in db: Database) throws {
        let now = clock.nowMilliseconds
        try revoke(userID: userID, revokedAt: now, keepUntil: now + Self.retention.wholeMilliseconds, in: db)
    }
}
