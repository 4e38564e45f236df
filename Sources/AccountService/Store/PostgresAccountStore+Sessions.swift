import PostgresNIO
import RPCCore
import ServiceRuntime
import YediProto

/// Sessions and refresh-token rotation, and the password attempts the sign-in throttle counts.
extension PostgresAccountStore {
    // MARK: Sessions

    func createSession(_ session: SessionRecord) async throws {
        try await postgres.write { tx in try await Self.insert(session, tx) }
    }

    /// The token is claimed in one statement: of two replicas given the same token at once, the second's
    /// update waits for the first's commit, then finds the row used and claims nothing. It is then told
    /// `reused` (and the family ends), exactly as the second of two serial calls is.
    func rotateSession(refreshHash: [UInt8], next: SessionRecord, now: Int64) async throws -> SessionRotation {
        let hash = Self.bytea(refreshHash)
        return try await postgres.write { tx in
            if let claimed = try await tx.query(
                """
                UPDATE session SET used_at_ms = \(now)
                WHERE refresh_hash = \(hash) AND used_at_ms IS NULL AND revoked_at_ms IS NULL AND expires_at_ms > \(now)
                RETURNING family_id, user_id
                """
            ).first {
                let (familyID, userID) = try claimed.decode((String, String).self)
                var next = next
                next.familyID = familyID
                next.userID = userID
                try await Self.insert(next, tx)
                return .rotated(userID: userID, familyID: familyID)
            }
            // Not claimed: say why, from the row as it is now (this statement sees the other's commit).
            guard
                let row = try await tx.query(
                    "SELECT family_id, expires_at_ms, used_at_ms, revoked_at_ms FROM session WHERE refresh_hash = \(hash)"
                ).first
            else { return .unknown }
            let (familyID, expiresAt, usedAt, revokedAt) = try row.decode((String, Int64, Int64?, Int64?).self)
            if revokedAt != nil { return .unknown }
            if usedAt != nil {
                // Shown twice: someone else has it. End every session of the family (and its devices).
                try await Self.endFamily(familyID, now: now, tx)
                return .reused
            }
            // Expired; or created after the claim looked (nothing to claim then), which is no token yet.
            return expiresAt <= now ? .expired : .unknown
        }
    }

    func pruneSessions(deadBefore: Int64) async throws -> Int {
        try await postgres.write { tx in
            try await Self.count(
                """
                WITH gone AS (
                    DELETE FROM session WHERE expires_at_ms < \(deadBefore) OR revoked_at_ms < \(deadBefore) RETURNING 1)
                SELECT count(*) FROM gone
                """, tx)
        }
    }

    func revokeFamily(refreshHash: [UInt8], now: Int64) async throws -> Bool {
        try await postgres.write { tx in
            guard
                let row = try await tx.query(
                    "SELECT family_id FROM session WHERE refresh_hash = \(Self.bytea(refreshHash))"
                ).first
            else { return false }
            try await Self.endFamily(try row.decode(String.self), now: now, tx)
            return true
        }
    }

    /// Ends every session of `userID` (and removes the push devices they registered), and refuses the
    /// user's access tokens issued up to `tokensUpTo` here and, through the outbox, in every peer.
    static func revokeEverySession(
        userID: String, now: Int64, tokensUpTo revokedAt: Int64, revokedUsers: RevokedUsers,
        events: PostgresAccountEvents, _ tx: PostgresTransaction
    ) async throws {
        try await tx.query(
            "UPDATE session SET revoked_at_ms = \(now) WHERE user_id = \(userID) AND revoked_at_ms IS NULL")
        try await tx.query("DELETE FROM device WHERE user_id = \(userID)")
        let revocation = YediRuntime.RevokeUserRequest(
            userID: userID, revokedAtMs: revokedAt, keepUntilMs: revokedAt + RevokedUsers.retention.wholeMilliseconds)
        try await revokedUsers.revoke(
            userID: userID, revokedAt: revocation.revokedAtMs, keepUntil: revocation.keepUntilMs, in: tx)
        try await events.tokensRevoked(revocation, in: tx)
    }

    /// Revokes every session of a family and removes the push devices it registered.
    static func endFamily(_ familyID: String, now: Int64, _ tx: PostgresTransaction) async throws {
        try await tx.query(
            "UPDATE session SET revoked_at_ms = \(now) WHERE family_id = \(familyID) AND revoked_at_ms IS NULL")
        try await tx.query("DELETE FROM device WHERE session_family_id = \(familyID)")
    }

    // MARK: Password attempts (the sign-in throttle)

    /// `SignInThrottle` decides from two rows, the pair and the account's backstop, which may not exist
    /// yet; so the transaction first takes the account's advisory lock, held to its end: attempts at one
    /// account, from every replica, are decided one after the other, each on what the previous committed.
    func beginPasswordAttempt(
        account: String, address: String, now: Int64, throttle: SignInThrottle
    ) async throws -> ThrottleDecision {
        // Forget a few records that no longer change an answer, so guesses at many emails do not grow the
        // table without bound. A statement of its own, skipping rows others hold: it never waits, and the
        // decision below holds no other account's rows.
        try await postgres.read { connection in
            _ = try await connection.query(
                """
                DELETE FROM password_attempt WHERE (account, address) IN (
                    SELECT account, address FROM password_attempt
                    WHERE NOT known AND window_started_at_ms < \(now - throttle.windowMilliseconds)
                        AND locked_until_ms <= \(now)
                    LIMIT 8 FOR UPDATE SKIP LOCKED)
                """, logger: Self.logger
            ).collect()
        }
        return try await postgres.write { tx in
            try await Self.lock(Self.attemptsLock(account), tx)
            var state = try await Self.attempts(tx, account: account, address: address)
            let before = state
            let decision = throttle.begin(&state, now: now)
            if state != before { try await Self.save(tx, state, account: account, address: address) }
            return decision
        }
    }

    func endPasswordAttempt(
        account: String, address: String, outcome: PasswordAttemptOutcome, throttle: SignInThrottle
    ) async throws {
        try await postgres.write { tx in
            try await Self.lock(Self.attemptsLock(account), tx)
            var state = try await Self.attempts(tx, account: account, address: address)
            throttle.end(&state, outcome)
            try await Self.save(tx, state, account: account, address: address)
        }
    }

    func passwordAttempts(account: String, address: String) async throws -> ThrottleState {
        try await postgres.snapshot { tx in try await Self.attempts(tx, account: account, address: address) }
    }

    static func attemptsLock(_ account: String) -> String { "yedi.account.password-attempt/" + account }

    /// The pair's record and the account's backstop (address ''), in one statement.
    static func attempts(_ tx: PostgresTransaction, account: String, address: String) async throws -> ThrottleState {
        var state = ThrottleState()
        for row in try await tx.query(
            """
            SELECT address, failures, window_started_at_ms, locked_until_ms, known FROM password_attempt
            WHERE account = \(account) AND address IN (\(address), '')
            """)
        {
            let (rowAddress, failures, windowStartedAt, lockedUntil, known) = try row.decode(
                (String, Int, Int64, Int64, Bool).self)
            let record = ThrottleRecord(
                failures: failures, windowStartedAtMilliseconds: windowStartedAt, lockedUntilMilliseconds: lockedUntil,
                known: known)
            if rowAddress == address { state.pair = record }
            if rowAddress == "" { state.account = record }
        }
        return state
    }

    static func save(_ tx: PostgresTransaction, _ state: ThrottleState, account: String, address: String) async throws {
        for (key, record) in [(address, state.pair), ("", state.account)] {
            guard let record else { continue }
            try await tx.query(
                """
                INSERT INTO password_attempt (account, address, failures, window_started_at_ms, locked_until_ms, known)
                VALUES (\(account), \(key), \(record.failures), \(record.windowStartedAtMilliseconds),
                    \(record.lockedUntilMilliseconds), \(record.known))
                ON CONFLICT (account, address) DO UPDATE SET failures = excluded.failures,
                    window_started_at_ms = excluded.window_started_at_ms, locked_until_ms = excluded.locked_until_ms,
                    known = excluded.known
                """)
        }
    }
}
