import PostgresNIO
import RPCAccess
import ServiceRuntime
import YediCrypto
import YediProto

/// Password resets waiting for their mailed code (`password_reset`), new passwords, and the code check
/// behind every code the service mails or texts.
extension PostgresAccountStore {
    func startPasswordReset(_ reset: PasswordResetRecord, mail: YediRuntime.MailMessage?) async throws {
        try await postgres.write { tx in
            try await tx.query(
                """
                INSERT INTO password_reset (id, app, user_id, code_hash, attempts, expires_at_ms, created_at_ms)
                VALUES (\(reset.id), \(reset.app.rawValue), \(reset.userID), \(Self.bytea(reset.codeHash)),
                    \(reset.attempts), \(reset.expiresAtMilliseconds), \(reset.createdAtMilliseconds))
                """)
            if let mail { try await events.mail(mail, in: tx) }
        }
    }

    func checkPasswordResetCode(id: String, app: AppID, codeHash: [UInt8], now: Int64, maximumAttempts: Int)
        async throws -> PasswordResetRecord?
    {
        try await postgres.write { tx in
            guard
                let row = try await Self.checkCode(
                    in: .passwordReset, id: id, app: app, codeHash: codeHash, now: now,
                    maximumAttempts: maximumAttempts, tx)
            else { return nil }
            return PasswordResetRecord(
                id: try row["id"].decode(String.self), app: AppID(rawValue: try row["app"].decode(String.self)),
                userID: try row["user_id"].decode(String?.self), codeHash: try Self.bytes(row["code_hash"]),
                attempts: try row["attempts"].decode(Int.self),
                expiresAtMilliseconds: try row["expires_at_ms"].decode(Int64.self),
                createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self))
        }
    }

    func replacePassword(_ replacement: PasswordReplacement) async throws {
        let revokedUsers = self.revokedUsers
        let events = self.events
        try await postgres.write { tx in
            if let resetID = replacement.resetID {
                // Deleted, not read: of two replicas using one reset at once, the second finds nothing.
                guard
                    try await !tx.query(
                        "DELETE FROM password_reset WHERE id = \(resetID) AND user_id = \(replacement.userID) RETURNING 1"
                    ).isEmpty
                else { throw AccountStoreError.notFound }
            }
            guard
                try await !tx.query(
                    """
                    UPDATE app_user SET password_hash = \(replacement.passwordHash)
                    WHERE id = \(replacement.userID) AND password_hash IS NOT NULL RETURNING 1
                    """
                ).isEmpty
            else { throw AccountStoreError.notFound }
            // A reset proves the mailbox; the resets still waiting are worth nothing now.
            try await tx.query("DELETE FROM password_reset WHERE user_id = \(replacement.userID)")
            let now = replacement.session.createdAtMilliseconds
            try await Self.revokeEverySession(
                userID: replacement.userID, now: now, tokensUpTo: replacement.revokedAtMilliseconds,
                revokedUsers: revokedUsers, events: events, tx)
            try await Self.insert(replacement.session, tx)
            if let notice = replacement.notice { try await events.mail(notice, in: tx) }
        }
    }

    /// The tables whose rows carry a mailed or texted code.
    enum CodeTable: String {
        case pendingSignUp = "pending_sign_up"
        case phoneVerification = "phone_verification"
        case passwordReset = "password_reset"
    }

    /// The row `id` of `table` (of `app`, when given) if `codeHash` is its code, it has not expired at `now`
    /// and has tries left; a wrong code spends one of its `maximumAttempts` tries. Nil for every refusal
    /// alike. The row stays locked until the transaction ends, so concurrent checks of one code (on any
    /// replica) are decided one after the other and every wrong one is counted.
    static func checkCode(
        in table: CodeTable, id: String, app: AppID?, codeHash: [UInt8], now: Int64, maximumAttempts: Int,
        _ tx: PostgresTransaction
    ) async throws -> PostgresRandomAccessRow? {
        let rows: [PostgresRow]
        if let app {
            rows = try await tx.query(
                "SELECT * FROM \(unescaped: table.rawValue) WHERE id = \(id) AND app = \(app.rawValue) FOR UPDATE")
        } else {
            rows = try await tx.query("SELECT * FROM \(unescaped: table.rawValue) WHERE id = \(id) FOR UPDATE")
        }
        guard let row = rows.first?.makeRandomAccess(), try row["expires_at_ms"].decode(Int64.self) > now,
            try row["attempts"].decode(Int.self) < maximumAttempts
        else { return nil }
        guard ConstantTime.equals(try bytes(row["code_hash"]), codeHash) else {
            try await tx.query("UPDATE \(unescaped: table.rawValue) SET attempts = attempts + 1 WHERE id = \(id)")
            return nil
        }
        return row
    }
}
