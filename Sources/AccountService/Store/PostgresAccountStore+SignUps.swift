import PostgresNIO
import RPCAccess
import ServiceRuntime
import YediProto

/// Sign-ups waiting for the code mailed to their address (`pending_sign_up`), and the mail that carries it.
extension PostgresAccountStore {
    func startSignUp(_ pending: PendingSignUpRecord?, mail: YediRuntime.MailMessage) async throws {
        try await postgres.write { tx in
            if let pending {
                try await tx.query(
                    """
                    INSERT INTO pending_sign_up
                        (id, email, app, request, password_hash, code_hash, attempts, expires_at_ms, created_at_ms)
                    VALUES (\(pending.id), \(pending.email), \(pending.app.rawValue), \(Self.bytea(pending.request)),
                        \(pending.passwordHash), \(Self.bytea(pending.codeHash)), \(pending.attempts),
                        \(pending.expiresAtMilliseconds), \(pending.createdAtMilliseconds))
                    """)
            }
            try await events.mail(mail, in: tx)
        }
    }

    func checkSignUpCode(id: String, codeHash: [UInt8], now: Int64, maximumAttempts: Int) async throws
        -> PendingSignUpRecord?
    {
        try await postgres.write { tx in
            guard
                let row = try await Self.checkCode(
                    in: .pendingSignUp, id: id, app: nil, codeHash: codeHash, now: now,
                    maximumAttempts: maximumAttempts, tx)
            else { return nil }
            return PendingSignUpRecord(
                id: try row["id"].decode(String.self), email: try row["email"].decode(String.self),
                app: AppID(rawValue: try row["app"].decode(String.self)), request: try Self.bytes(row["request"]),
                passwordHash: try row["password_hash"].decode(String.self), codeHash: try Self.bytes(row["code_hash"]),
                attempts: try row["attempts"].decode(Int.self),
                expiresAtMilliseconds: try row["expires_at_ms"].decode(Int64.self),
                createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self))
        }
    }

    /// The sign-up's row is deleted first: of two replicas completing it at once, the second waits for the
    /// first's commit, then deletes nothing and answers `notFound`.
    func completeSignUp(id: String, user: UserRecord, designer: DesignerRecord?, session: SessionRecord) async throws {
        try await Self.refusingTaken {
            try await postgres.write { tx in
                guard try await !tx.query("DELETE FROM pending_sign_up WHERE id = \(id) RETURNING 1").isEmpty else {
                    throw AccountStoreError.notFound
                }
                try await insertAccount(user, designer: designer, session: session, tx)
            }
        }
    }

    func pruneSignUps(expiredBefore: Int64) async throws -> Int {
        try await postgres.write { tx in
            let signUps = try await Self.count(
                """
                WITH gone AS (DELETE FROM pending_sign_up WHERE expires_at_ms < \(expiredBefore) RETURNING 1)
                SELECT count(*) FROM gone
                """, tx)
            let resets = try await Self.count(
                """
                WITH gone AS (DELETE FROM password_reset WHERE expires_at_ms < \(expiredBefore) RETURNING 1)
                SELECT count(*) FROM gone
                """, tx)
            return signUps + resets
        }
    }
}
