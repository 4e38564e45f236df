import Foundation
import GRDB
import RPCCore
import ServiceRuntime
import YediProto

/// Sessions and refresh-token rotation, and the password attempts the sign-in throttle counts.
extension SQLiteAccountStore {
    // MARK: Sessions

    func createSession(_ session: SessionRecord) async throws {
        try await database.write { db in try Self.insert(session, db) }
    }

    func rotateSession(refreshHash: [UInt8], next: SessionRecord, now: Int64) async throws -> SessionRotation {
        try await database.write { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql:
                        "SELECT id, family_id, user_id, expires_at_ms, used_at_ms, revoked_at_ms FROM session WHERE refresh_hash = ?",
                    arguments: [Data(refreshHash)])
            else { return .unknown }
            let familyID: String = row["family_id"]
            if (row["revoked_at_ms"] as Int64?) != nil { return .unknown }
            if (row["used_at_ms"] as Int64?) != nil {
                // Shown twice: someone else has it. End every session of the family (and its devices).
                try Self.endFamily(familyID, now: now, db)
                return .reused
            }
            if (row["expires_at_ms"] as Int64) <= now { return .expired }
            try db.execute(
                sql: "UPDATE session SET used_at_ms = ? WHERE id = ?", arguments: [now, row["id"] as String])
            var next = next
            next.familyID = familyID
            next.userID = row["user_id"]
            try Self.insert(next, db)
            return .rotated(userID: next.userID, familyID: familyID)
        }
    }

    func pruneSessions(deadBefore: Int64) async throws -> Int {
        try await database.write { db in
            try db.execute(
                sql: "DELETE FROM session WHERE expires_at_ms < ? OR revoked_at_ms < ?",
                arguments: [deadBefore, deadBefore])
            return db.changesCount
        }
    }

    func revokeFamily(refreshHash: [UInt8], now: Int64) async throws -> Bool {
        try await database.write { db in
            guard
                let familyID = try String.fetchOne(
                    db, sql: "SELECT family_id FROM session WHERE refresh_hash = ?", arguments: [Data(refreshHash)])
            else { return false }
            try Self.endFamily(familyID, now: now, db)
            return true
        }
    }

    /// Ends every session of `userID` (and removes the push devices they registered), and refuses the
    /// user's access tokens issued up to `tokensUpTo` here and, through the outbox, in every peer: a
    /// suspension, a new password.
    static func revokeEverySession(
        userID: String, now: Int64, tokensUpTo revokedAt: Int64, revokedUsers: RevokedUsers, events: AccountEvents,
        _ db: Database
    ) throws {
        try db.execute(
            sql: "UPDATE session SET revoked_at_ms = ? WHERE user_id = ? AND revoked_at_ms IS NULL",
            arguments: [now, userID])
        try db.execute(sql: "DELETE FROM device WHERE user_id = ?", arguments: [userID])
        let revocation = YediRuntime.RevokeUserRequest(
            userID: userID, revokedAtMs: revokedAt, keepUntilMs: revokedAt + RevokedUsers.retention.wholeMilliseconds)
        try revokedUsers.revoke(
            userID: userID, revokedAt: revocation.revokedAtMs, keepUntil: revocation.keepUntilMs, in: db)
        try events.tokensRevoked(revocation, in: db)
    }

    /// Revokes every session of a family and removes the push devices it registered, so a signed-out
    /// device gets no more pushes (docs/account.md, "Devices and the inbox").
    static func endFamily(_ familyID: String, now: Int64, _ db: Database) throws {
        try db.execute(
            sql: "UPDATE session SET revoked_at_ms = ? WHERE family_id = ? AND revoked_at_ms IS NULL",
            arguments: [now, familyID])
        try SQLiteNotificationStore.removeDevices(sessionFamilyID: familyID, in: db)
    }

    // MARK: Password attempts (the sign-in throttle)

    func beginPasswordAttempt(
        account: String, address: String, now: Int64, throttle: SignInThrottle
    ) async throws -> ThrottleDecision {
        try await database.write { db in
            // Forget a few records that no longer change an answer, so guesses at many emails do not
            // grow the table without bound.
            try db.execute(
                sql: """
                    DELETE FROM password_attempt WHERE (account, address) IN (
                        SELECT account, address FROM password_attempt
                        WHERE known = 0 AND window_started_at_ms < ? AND locked_until_ms <= ? LIMIT 8)
                    """,
                arguments: [now - throttle.windowMilliseconds, now])
            var state = try Self.attempts(db, account: account, address: address)
            let before = state
            let decision = throttle.begin(&state, now: now)
            if state != before { try Self.save(db, state, account: account, address: address) }
            return decision
        }
    }

    func endPasswordAttempt(
        account: String, address: String, outcome: PasswordAttemptOutcome, throttle: SignInThrottle
    ) async throws {
        try await database.write { db in
            var state = try Self.attempts(db, account: account, address: address)
            throttle.end(&state, outcome)
            try Self.save(db, state, account: account, address: address)
        }
    }

    func passwordAttempts(account: String, address: String) async throws -> ThrottleState {
        try await database.read { db in try Self.attempts(db, account: account, address: address) }
    }

    /// The account's backstop row has the address ''.
    static func attempts(_ db: Database, account: String, address: String) throws -> ThrottleState {
        func record(_ address: String) throws -> ThrottleRecord? {
            try Row.fetchOne(
                db, sql: "SELECT * FROM password_attempt WHERE account = ? AND address = ?",
                arguments: [account, address]
            ).map { row in
                ThrottleRecord(
                    failures: row["failures"], windowStartedAtMilliseconds: row["window_started_at_ms"],
                    lockedUntilMilliseconds: row["locked_until_ms"], known: row["known"])
            }
        }
        return ThrottleState(pair: try record(address), account: try record(""))
    }

    static func save(_ db: Database, _ state: ThrottleState, account: String, address: String) throws {
        for (key, record) in [(address, state.pair), ("", state.account)] {
            guard let record else { continue }
            try db.execute(
                sql: """
                    INSERT INTO password_attempt (account, address, failures, window_started_at_ms, locked_until_ms, known)
                    VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (account, address) DO UPDATE SET failures = excluded.failures,
                        window_started_at_ms = excluded.window_started_at_ms, locked_until_ms = excluded.locked_until_ms,
                        known = excluded.known
                    """,
                arguments: [
                    account, key, record.failures, record.windowStartedAtMilliseconds, record.lockedUntilMilliseconds,
                    record.known,
                ])
        }
    }
}
