import PostgresNIO
import RPCAccess
import ServiceRuntime
import YediProto

/// Verified identities (`user_identity`), the phone codes that prove a number (`phone_verification`)
/// and the sign-up tickets of identities without an account (`sign_up_ticket`).
extension PostgresAccountStore {
    func nicknameTaken(_ nickname: String, app: AppID) async throws -> Bool {
        try await !rows(
            """
            SELECT 1 FROM app_user
            WHERE app = \(app.rawValue) AND nickname IS NOT NULL AND lower(nickname) = lower(\(nickname))
            """
        ).isEmpty
    }

    func user(app: AppID, identity: VerifiedIdentity) async throws -> UserRecord? {
        try await rows(
            """
            SELECT app_user.* FROM user_identity JOIN app_user ON app_user.id = user_identity.user_id
            WHERE user_identity.app = \(app.rawValue) AND user_identity.kind = \(identity.kind)
                AND user_identity.subject = \(identity.subject)
            """
        ).first.map(Self.user)
    }

    func identities(userID: String) async throws -> [VerifiedIdentity] {
        try await rows("SELECT kind, subject FROM user_identity WHERE user_id = \(userID) ORDER BY kind, subject")
            .map { row in
                let (kind, subject) = try row.decode((String, String).self)
                return VerifiedIdentity(kind: kind, subject: subject)
            }
    }

    /// The send limits' records are read, decided on and written under the advisory locks of both keys
    /// (taken in one order, so two sends never wait for each other crosswise): concurrent sends to one
    /// number, or from one address, on any replica, are decided one after the other. The records live in
    /// `phone_send_throttle`, which SLP's version `account-11-slp-sign-up-and-sends` creates.
    func startPhoneVerification(
        _ verification: PhoneVerificationRecord, sms: YediRuntime.SmsMessage, limits: PhoneSendLimits
    ) async throws -> PhoneSendDecision {
        try await postgres.write { tx in
            for key in [limits.numberKey, limits.addressKey].sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                try await Self.lock(Self.sendLock(key), tx)
            }
            var number = try await Self.sendRecord(limits.numberKey, tx)
            var address = try await Self.sendRecord(limits.addressKey, tx)
            let decision = limits.throttle.begin(
                number: &number, address: &address, now: verification.createdAtMilliseconds)
            if let number { try await Self.save(number, key: limits.numberKey, tx) }
            guard decision == .admitted else { return decision }
            if let address { try await Self.save(address, key: limits.addressKey, tx) }
            try await tx.query(
                """
                INSERT INTO phone_verification (id, app, phone, code_hash, attempts, expires_at_ms, created_at_ms)
                VALUES (\(verification.id), \(verification.app.rawValue), \(verification.phone),
                    \(Self.bytea(verification.codeHash)), \(verification.attempts), \(verification.expiresAtMilliseconds),
                    \(verification.createdAtMilliseconds))
                """)
            try await events.sms(sms, in: tx)
            return decision
        }
    }

    static func sendLock(_ key: [UInt8]) -> String {
        "yedi.account.phone-send/" + key.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    private static func sendRecord(_ key: [UInt8], _ tx: PostgresTransaction) async throws -> PhoneSendRecord? {
        guard
            let row = try await tx.query(
                """
                SELECT window_started_at_ms, sends, last_sent_at_ms, locked_until_ms FROM phone_send_throttle
                WHERE key = \(bytea(key))
                """
            ).first
        else { return nil }
        let (windowStartedAt, sends, lastSentAt, lockedUntil) = try row.decode((Int64, Int, Int64, Int64).self)
        return PhoneSendRecord(
            windowStartedAtMilliseconds: windowStartedAt, sends: sends, lastSentAtMilliseconds: lastSentAt,
            lockedUntilMilliseconds: lockedUntil)
    }

    private static func save(_ record: PhoneSendRecord, key: [UInt8], _ tx: PostgresTransaction) async throws {
        try await tx.query(
            """
            INSERT INTO phone_send_throttle (key, window_started_at_ms, sends, last_sent_at_ms, locked_until_ms)
            VALUES (\(bytea(key)), \(record.windowStartedAtMilliseconds), \(record.sends),
                \(record.lastSentAtMilliseconds ?? record.windowStartedAtMilliseconds), \(record.lockedUntilMilliseconds))
            ON CONFLICT (key) DO UPDATE SET window_started_at_ms = excluded.window_started_at_ms,
                sends = excluded.sends, last_sent_at_ms = excluded.last_sent_at_ms,
                locked_until_ms = excluded.locked_until_ms
            """)
    }

    func checkPhoneCode(id: String, app: AppID, codeHash: [UInt8], now: Int64, maximumAttempts: Int) async throws
        -> PhoneVerificationRecord?
    {
        try await postgres.write { tx in
            guard
                let row = try await Self.checkCode(
                    in: .phoneVerification, id: id, app: app, codeHash: codeHash, now: now,
                    maximumAttempts: maximumAttempts, tx)
            else { return nil }
            // A right code proves the number once.
            try await tx.query("DELETE FROM phone_verification WHERE id = \(id)")
            return PhoneVerificationRecord(
                id: try row["id"].decode(String.self), app: AppID(rawValue: try row["app"].decode(String.self)),
                phone: try row["phone"].decode(String.self), codeHash: try Self.bytes(row["code_hash"]),
                attempts: try row["attempts"].decode(Int.self),
                expiresAtMilliseconds: try row["expires_at_ms"].decode(Int64.self),
                createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self))
        }
    }

    func createSignUpTicket(_ ticket: SignUpTicketRecord) async throws {
        try await postgres.write { tx in
            try await tx.query(
                """
                INSERT INTO sign_up_ticket (ticket_hash, app, kind, subject, email, expires_at_ms)
                VALUES (\(Self.bytea(ticket.ticketHash)), \(ticket.app.rawValue), \(ticket.identity.kind),
                    \(ticket.identity.subject), \(ticket.identity.email), \(ticket.expiresAtMilliseconds))
                """)
        }
    }

    func signUpTicket(hash: [UInt8], app: AppID, now: Int64) async throws -> SignUpTicketRecord? {
        guard
            let row = try await rows(
                """
                SELECT app, kind, subject, email, expires_at_ms FROM sign_up_ticket
                WHERE ticket_hash = \(Self.bytea(hash)) AND app = \(app.rawValue) AND expires_at_ms > \(now)
                """
            ).first
        else { return nil }
        let (ticketApp, kind, subject, email, expiresAt) = try row.decode((String, String, String, String?, Int64).self)
        return SignUpTicketRecord(
            ticketHash: hash, app: AppID(rawValue: ticketApp),
            identity: VerifiedIdentity(kind: kind, subject: subject, email: email), expiresAtMilliseconds: expiresAt)
    }

    /// The ticket is deleted first: of two replicas using it at once, the second finds it gone.
    func completeIdentitySignUp(ticket: SignUpTicketRecord, user: UserRecord, session: SessionRecord, now: Int64)
        async throws
    {
        try await Self.refusingTaken {
            try await postgres.write { tx in
                guard
                    try await !tx.query(
                        """
                        DELETE FROM sign_up_ticket
                        WHERE ticket_hash = \(Self.bytea(ticket.ticketHash)) AND app = \(ticket.app.rawValue)
                            AND expires_at_ms > \(now)
                        RETURNING 1
                        """
                    ).isEmpty
                else { throw AccountStoreError.notFound }
                try await insertAccount(user, designer: nil, session: session, tx)
                try await tx.query(
                    """
                    INSERT INTO user_identity (app, kind, subject, user_id, created_at_ms)
                    VALUES (\(ticket.app.rawValue), \(ticket.identity.kind), \(ticket.identity.subject), \(user.id), \(now))
                    """)
            }
        }
    }

    func pruneIdentityVerifications(expiredBefore: Int64) async throws -> Int {
        let sendsBefore = expiredBefore - PhoneSendThrottle().windowMilliseconds
        return try await postgres.write { tx in
            let verifications = try await Self.count(
                """
                WITH gone AS (DELETE FROM phone_verification WHERE expires_at_ms < \(expiredBefore) RETURNING 1)
                SELECT count(*) FROM gone
                """, tx)
            let tickets = try await Self.count(
                """
                WITH gone AS (DELETE FROM sign_up_ticket WHERE expires_at_ms < \(expiredBefore) RETURNING 1)
                SELECT count(*) FROM gone
                """, tx)
            let sends = try await Self.count(
                """
                WITH gone AS (
                    DELETE FROM phone_send_throttle
                    WHERE locked_until_ms < \(expiredBefore) AND window_started_at_ms < \(sendsBefore) RETURNING 1)
                SELECT count(*) FROM gone
                """, tx)
            return verifications + tickets + sends
        }
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
