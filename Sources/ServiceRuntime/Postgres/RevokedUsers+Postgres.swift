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
    /// memory once the transaction commits, in the other replicas' at their next `refresh`
    /// (`PostgresRevocationRefresh`, every second).
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

    /// Takes into memory the revocations other replicas of this service wrote (each replica's own are in
    /// its memory at commit); answers how many were news. One indexed read of the rows still in force: a
    /// day's deletions and suspensions.
    @discardableResult
    public func refresh(from postgres: ServicePostgres) async throws -> Int {
        let now = clock.nowMilliseconds
        let rows = try await postgres.read { connection in
            try await connection.query(
                "SELECT user_digest, revoked_at_ms, keep_until_ms FROM runtime_revoked_user WHERE keep_until_ms > \(now)",
                logger: postgres.logger
            )
            .collect().map { row in try row.decode((String, Int64, Int64).self) }
        }
        return remember(rows.map { (digest: $0.0, revokedAt: $0.1, keepUntil: $0.2) }, now: now)
    }
}
