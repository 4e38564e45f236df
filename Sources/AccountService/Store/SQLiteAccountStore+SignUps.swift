import Foundation
import GRDB
import RPCAccess
import ServiceRuntime
import YediCrypto
import YediProto

/// Sign-ups waiting for the code mailed to their address (`pending_sign_up`), and the mail that carries it.
extension SQLiteAccountStore {
    func startSignUp(_ pending: PendingSignUpRecord?, mail: YediRuntime.MailMessage) async throws {
        try await database.write { db in
            if let pending {
                try db.execute(
                    sql: """
                        INSERT INTO pending_sign_up
                            (id, email, app, request, password_hash, code_hash, attempts, expires_at_ms, created_at_ms)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        pending.id, pending.email, pending.app.rawValue, Data(pending.request), pending.passwordHash,
                        Data(pending.codeHash), pending.attempts, pending.expiresAtMilliseconds,
                        pending.createdAtMilliseconds,
                    ])
            }
            try events.mail(mail, in: db)
        }
    }

    func checkSignUpCode(id: String, codeHash: [UInt8], now: Int64, maximumAttempts: Int) async throws
        -> PendingSignUpRecord?
    {
        try await database.write { db in
            guard
                let row = try Self.checkCode(
                    in: "pending_sign_up", id: id, app: nil, codeHash: codeHash, now: now,
                    maximumAttempts: maximumAttempts, db)
            else { return nil }
            return PendingSignUpRecord(
                id: row["id"], email: row["email"], app: AppID(rawValue: row["app"]),
                request: [UInt8]((row["request"] as Data?) ?? Data()),
                passwordHash: row["password_hash"], codeHash: [UInt8]((row["code_hash"] as Data?) ?? Data()),
                attempts: row["attempts"], expiresAtMilliseconds: row["expires_at_ms"],
                createdAtMilliseconds: row["created_at_ms"])
        }
    }

    func completeSignUp(id: String, user: UserRecord, designer: DesignerRecord?, session: SessionRecord) async throws {
        do {
            try await database.write { db in
                try db.execute(sql: "DELETE FROM pending_sign_up WHERE id = ?", arguments: [id])
                guard db.changesCount == 1 else { throw AccountStoreError.notFound }
                try insertAccount(user, designer: designer, session: session, db)
            }
        } catch let error as DatabaseError where Self.isEmailTaken(error) {
            throw AccountStoreError.emailTaken
        }
    }

    func pruneSignUps(expiredBefore: Int64) async throws -> Int {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM pending_sign_up WHERE expires_at_ms < ?", arguments: [expiredBefore])
            let signUps = db.changesCount
            try db.execute(sql: "DELETE FROM password_reset WHERE expires_at_ms < ?", arguments: [expiredBefore])
            return signUps + db.changesCount
        }
    }
}
