import PostgresNIO
import ServiceRuntime

/// SignUp in one transaction on PostgreSQL: the platform's identity sign-up rows with SLP's profile and
/// the push device beside them, as `SQLiteSlpStore.signUp` writes them.
///
/// Concurrent sign-ups meet on rows and constraints, never on a check alone: the same ticket twice waits
/// on the ticket's row (the second's DELETE finds it gone, then sees the first's `slp_used_ticket` row);
/// two tickets of one number meet on `user_identity_key`, a nickname on `app_user_nickname_in_app` (each
/// rolls the whole sign-up back, the ticket included).
extension PostgresSlpStore {
    func signUp(_ signUp: SlpSignUpRecord) async throws -> SlpSignUpOutcome {
        let ticket = signUp.ticket
        let hash = PostgresAccountStore.bytea(ticket.ticketHash)
        do {
            return try await postgres.write { tx in
                if try await Self.ticketUsed(ticket.ticketHash, now: signUp.now, tx) { return .alreadyRegistered }
                let linked = try await tx.query(
                    """
                    SELECT 1 FROM user_identity
                    WHERE app = \(ticket.app.rawValue) AND kind = \(ticket.identity.kind)
                        AND subject = \(ticket.identity.subject)
                    """)
                if !linked.isEmpty { return .alreadyRegistered }
                guard
                    try await !tx.query(
                        """
                        DELETE FROM sign_up_ticket
                        WHERE ticket_hash = \(hash) AND app = \(ticket.app.rawValue) AND expires_at_ms > \(signUp.now)
                        RETURNING 1
                        """
                    ).isEmpty
                else {
                    // Used by a sign-up that committed while this one waited for the row: a new statement sees it.
                    let used = try await Self.ticketUsed(ticket.ticketHash, now: signUp.now, tx)
                    return used ? .alreadyRegistered : .unknownTicket
                }
                // The user row has no designer: `accountCreated` tells nobody of it.
                try await PostgresAccountStore.insert(signUp.user, tx)
                try await PostgresAccountStore.insert(signUp.session, tx)
                try await tx.query(
                    """
                    INSERT INTO user_identity (app, kind, subject, user_id, created_at_ms)
                    VALUES (\(ticket.app.rawValue), \(ticket.identity.kind), \(ticket.identity.subject),
                        \(signUp.user.id), \(signUp.now))
                    """)
                _ = try await Self.insert(signUp.profile, tx)
                if let device = signUp.device {
                    _ = try await PostgresNotificationStore.register(device, keep: signUp.keepDevices, tx)
                }
                try await tx.query(
                    """
                    INSERT INTO slp_used_ticket (ticket_hash, user_id, expires_at_ms)
                    VALUES (\(hash), \(signUp.user.id), \(ticket.expiresAtMilliseconds))
                    """)
                return .signedUp
            }
        } catch let violation as PostgresConstraintViolation where violation.isUniqueViolation {
            switch violation.constraint {
            case "app_user_nickname_in_app":
                // Two tickets of one number with one nickname at once: the winner may hold the nickname with
                // this very identity, and SQLite, taking them in turn, answers "already registered" then.
                let linked = try await postgres.snapshot { tx in
                    try await !tx.query(
                        """
                        SELECT 1 FROM user_identity
                        WHERE app = \(ticket.app.rawValue) AND kind = \(ticket.identity.kind)
                            AND subject = \(ticket.identity.subject)
                        """
                    ).isEmpty
                }
                return linked ? .alreadyRegistered : .nicknameTaken
            case "user_identity_key": return .alreadyRegistered
            default: throw violation
            }
        }
    }

    func ticketUsed(hash: [UInt8], now: Int64) async throws -> Bool {
        try await postgres.snapshot { tx in try await Self.ticketUsed(hash, now: now, tx) }
    }

    static func ticketUsed(_ hash: [UInt8], now: Int64, _ tx: PostgresTransaction) async throws -> Bool {
        try await !tx.query(
            """
            SELECT 1 FROM slp_used_ticket
            WHERE ticket_hash = \(PostgresAccountStore.bytea(hash)) AND expires_at_ms > \(now)
            """
        ).isEmpty
    }
}
