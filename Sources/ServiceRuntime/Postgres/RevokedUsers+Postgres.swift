import PostgresNIO

extension RevokedUsers {
    /// Loads the revocations still in force from a PostgreSQL `runtime_revoked_user`, forgetting those past
    /// their retention.
    public convenience init(postgres: ServicePostgres, clock: any WallClock) async throws {
        let now = clock.nowMilliseconds
        let rows = try await postgres.write { tx in
            try await tx.query("DELETE FROM runtime_revoked_user WHERE keep_until_ms <= \(now)")
            return try await tx.query("SELECT user_digest, revoked_at_ms, keep_until_ms FROM runtime_revoked_user")
                .map { row in try row.decode((String, Int64, Int64).self) }
        }
        var entries: [String: (revokedAt: Int64, keepUntil: Int64)] = [:]
        for (digest, revokedAt, keepUntil) in rows { entries[digest] = (revokedAt, keepUntil) }
        self.init(entries: entries, clock: clock)
    }

    /// `revoke(userID:revokedAt:keepUntil:in:)` inside a PostgreSQL transaction: one upsert keeping the
    /// latest instant, so concurrent revocations of one user on two replicas both count; in this process's
    /// memory once the transaction commits. The other replicas of the same service read it only at start
    /// (docs/postgres.md, "Left undone").
    public func revoke(userID: String, revokedAt: Int64, keepUntil: Int64, in tx: PostgresTransaction) async throws {
        let digest = Self.digest(userID)
        try await tx.query(
            """
            INSERT INTO runtime_revoked_user (user_digest, revoked_at_ms, keep_until_ms)
            VALUES (\(digest), \(revokedAt), \(keepUntil))
            ON CONFLICT (user_digest) DO UPDATE SET
                revoked_at_ms = greatest(runtime_revoked_user.revoked_at_ms, excluded.revoked_at_ms),
                keep_until_ms = greatest(runtime_revoked_user.keep_until_ms, excluded.keep_until_ms)
            """)
        // Forget what is past its retention (measured on the caller's clock, as `revokedAt` is).
        try await tx.query("DELETE FROM runtime_revoked_user WHERE keep_until_ms <= \(revokedAt)")
        tx.afterCommit { self.remember(digest: digest, revokedAt: revokedAt, keepUntil: keepUntil, now: revokedAt) }
    }
}
