import Foundation
import GRDB
import RPCAccess
import ServiceRuntime
import YediCrypto
import YediProto

/// Verified identities (`user_identity`), the phone codes that prove a number (`phone_verification`)
/// and the sign-up tickets of identities without an account (`sign_up_ticket`).
extension SQLiteAccountStore {
    func nicknameTaken(_ nickname: String, app: AppID) async throws -> Bool {
        try await database.read { db in
            try Bool.fetchOne(
                db, sql: "SELECT 1 FROM user WHERE app = ? AND nickname = ? COLLATE NOCASE",
                arguments: [app.rawValue, nickname]) ?? false
        }
    }

    func user(app: AppID, identity: VerifiedIdentity) async throws -> UserRecord? {
        try await database.read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT user.* FROM user_identity JOIN user ON user.id = user_identity.user_id
                    WHERE user_identity.app = ? AND user_identity.kind = ? AND user_identity.subject = ?
                    """,
                arguments: [app.rawValue, identity.kind, identity.subject]
            ).map(Self.user)
        }
    }

    func identities(userID: String) async throws -> [VerifiedIdentity] {
        try await database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT kind, subject FROM user_identity WHERE user_id = ? ORDER BY kind, subject",
                arguments: [userID]
            ).map { VerifiedIdentity(kind: $0["kind"], subject: $0["subject"]) }
        }
    }

    func startPhoneVerification(
        _ verification: PhoneVerificationRecord, sms: YediRuntime.SmsMessage, limits: PhoneSendLimits
    ) async throws -> PhoneSendDecision {
        try await database.write { db in
            var number = try Self.sendRecord(limits.numberKey, db)
            var address = try Self.sendRecord(limits.addressKey, db)
            let decision = limits.throttle.begin(
                number: &number, address: &address, now: verification.createdAtMilliseconds)
            if let number { try Self.save(number, key: limits.numberKey, db) }
            guard decision == .admitted else { return decision }
            if let address { try Self.save(address, key: limits.addressKey, db) }
            try db.execute(
                sql: """
                    INSERT INTO phone_verification (id, app, phone, code_hash, attempts, expires_at_ms, created_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    verification.id, verification.app.rawValue, verification.phone, Data(verification.codeHash),
                    verification.attempts, verification.expiresAtMilliseconds, verification.createdAtMilliseconds,
                ])
            try events.sms(sms, in: db)
            return decision
        }
    }

    private static func sendRecord(_ key: [UInt8], _ db: Database) throws -> PhoneSendRecord? {
        try Row.fetchOne(db, sql: "SELECT * FROM phone_send_throttle WHERE key = ?", arguments: [Data(key)]).map {
            PhoneSendRecord(
                windowStartedAtMilliseconds: $0["window_started_at_ms"], sends: $0["sends"],
                lastSentAtMilliseconds: $0["last_sent_at_ms"], lockedUntilMilliseconds: $0["locked_until_ms"])
        }
    }

    private static func save(_ record: PhoneSendRecord, key: [UInt8], _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT OR REPLACE INTO phone_send_throttle
                    (key, window_started_at_ms, sends, last_sent_at_ms, locked_until_ms)
                VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [
                Data(key), record.windowStartedAtMilliseconds, record.sends,
                record.lastSentAtMilliseconds ?? record.windowStartedAtMilliseconds, record.lockedUntilMilliseconds,
            ])
    }

    func checkPhoneCode(id: String, app: AppID, codeHash: [UInt8], now: Int64, maximumAttempts: Int) async throws
        -> PhoneVerificationRecord?
    {
        try await database.write { db in
            guard
                let row = try Self.checkCode(
                    in: "phone_verification", id: id, app: app, codeHash: codeHash, now: now,
                    maximumAttempts: maximumAttempts, db)
            else { return nil }
            // A right code proves the number once.
            try db.execute(sql: "DELETE FROM phone_verification WHERE id = ?", arguments: [id])
            return PhoneVerificationRecord(
                id: row["id"], app: AppID(rawValue: row["app"]), phone: row["phone"],
                codeHash: [UInt8]((row["code_hash"] as Data?) ?? Data()), attempts: row["attempts"],
                expiresAtMilliseconds: row["expires_at_ms"], createdAtMilliseconds: row["created_at_ms"])
        }
    }

    func createSignUpTicket(_ ticket: SignUpTicketRecord) async throws {
        try await database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO sign_up_ticket (ticket_hash, app, kind, subject, email, expires_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    Data(ticket.ticketHash), ticket.app.rawValue, ticket.identity.kind, ticket.identity.subject,
                    ticket.identity.email, ticket.expiresAtMilliseconds,
                ])
        }
    }

    func signUpTicket(hash: [UInt8], app: AppID, now: Int64) async throws -> SignUpTicketRecord? {
        try await database.read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM sign_up_ticket WHERE ticket_hash = ? AND app = ? AND expires_at_ms > ?",
                arguments: [Data(hash), app.rawValue, now]
            ).map { row in
                SignUpTicketRecord(
                    ticketHash: hash, app: AppID(rawValue: row["app"]),
                    identity: VerifiedIdentity(kind: row["kind"], subject: row["subject"], email: row["email"]),
                    expiresAtMilliseconds: row["expires_at_ms"])
            }
        }
    }

    func completeIdentitySignUp(ticket: SignUpTicketRecord, user: UserRecord, session: SessionRecord, now: Int64)
        async throws
    {
        do {
            try await database.write { db in
                try db.execute(
                    sql: "DELETE FROM sign_up_ticket WHERE ticket_hash = ? AND app = ? AND expires_at_ms > ?",
                    arguments: [Data(ticket.ticketHash), ticket.app.rawValue, now])
                guard db.changesCount == 1 else { throw AccountStoreError.notFound }
                try insertAccount(user, designer: nil, session: session, db)
                try db.execute(
                    sql:
                        "INSERT INTO user_identity (app, kind, subject, user_id, created_at_ms) VALUES (?, ?, ?, ?, ?)",
                    arguments: [ticket.app.rawValue, ticket.identity.kind, ticket.identity.subject, user.id, now])
            }
        } catch let error as DatabaseError where Self.isNicknameTaken(error) {
            throw AccountStoreError.nicknameTaken
        } catch let error as DatabaseError
            where error.resultCode == .SQLITE_CONSTRAINT && error.message?.contains("user_identity.") == true
        {
            throw AccountStoreError.identityTaken
        }
    }

    func pruneIdentityVerifications(expiredBefore: Int64) async throws -> Int {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM phone_verification WHERE expires_at_ms < ?", arguments: [expiredBefore])
            let verifications = db.changesCount
            try db.execute(sql: "DELETE FROM sign_up_ticket WHERE expires_at_ms < ?", arguments: [expiredBefore])
            let tickets = db.changesCount
            try db.execute(
                sql: "DELETE FROM phone_send_throttle WHERE locked_until_ms < ? AND window_started_at_ms < ?",
                arguments: [expiredBefore, expiredBefore - PhoneSendThrottle().windowMilliseconds])
            return verifications + tickets + db.changesCount
        }
    }
}
