import Foundation
import GRDB
import RPCAccess
import ServiceRuntime
import YediCrypto
import YediProto

/// Password resets waiting for their mailed code (`password_reset`), and new passwords.
extension SQLiteAccountStore {
    func startPasswordReset(_ reset: PasswordResetRecord, mail: YediRuntime.MailMessage?) async throws {
        try await database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO password_reset (id, app, user_id, code_hash, attempts, expires_at_ms, created_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    reset.id, reset.app.rawValue, reset.userID, Data(reset.codeHash), reset.attempts,
                    reset.expiresAtMilliseconds, reset.createdAtMilliseconds,
                ])
            if let mail { try events.mail(mail, in: db) }
        }
    }

    func checkPasswordResetCode(id: String, app: AppID, codeHash: [UInt8], now: Int64, maximumAttempts: Int)
        async throws -> PasswordResetRecord?
    {
        try await database.write { db in
            guard
                let row = try Self.checkCode(
                    in: "password_reset", id: id, app: app, codeHash: codeHash, now: now,
                    maximumAttempts: maximumAttempts, db)
            else { return nil }
            return PasswordResetRecord(
                id: row["id"], app: AppID(rawValue: row["app"]), userID: row["user_id"],
                codeHash: [UInt8]((row["code_hash"] as Data?) ?? Data()), attempts: row["attempts"],
                expiresAtMilliseconds: row["expires_at_ms"], createdAtMilliseconds: row["created_at_ms"])
        }
    }

    func replacePassword(_ replacement: PasswordReplacement) async throws {
        try await database.write { db in
            if let resetID = replacement.resetID {
                try db.execute(
                    sql: "DELETE FROM password_reset WHERE id = ? AND user_id = ?",
                    arguments: [resetID, replacement.userID])
                guard db.changesCount == 1 else { throw AccountStoreError.notFound }
            }
            try db.execute(
                sql: "UPDATE user SET password_hash = ? WHERE id = ? AND password_hash IS NOT NULL",
                arguments: [replacement.passwordHash, replacement.userID])
            guard db.changesCount == 1 else { throw AccountStoreError.notFound }
            // A reset proves the mailbox; the resets still waiting are worth nothing now.
            try db.execute(sql: "DELETE FROM password_reset WHERE user_id = ?", arguments: [replacement.userID])
            let now = replacement.session.createdAtMilliseconds
            try Self.revokeEverySession(
                userID: replacement.userID, now: now, tokensUpTo: replacement.revokedAtMilliseconds,
                revokedUsers: revokedUsers, events: events, db)
            try Self.insert(replacement.session, db)
            if let notice = replacement.notice { try events.mail(notice, in: db) }
        }
    }

    /// The row `id` of `table` (of `app`, when given) if `codeHash` is its code, it has not expired at `now`
    /// and has tries left; a wrong code spends one of its `maximumAttempts` tries. Nil for every refusal
    /// alike. The one check behind every code the service mails or texts (`table` is a constant).
    static func checkCode(
        in table: String, id: String, app: AppID?, codeHash: [UInt8], now: Int64, maximumAttempts: Int,
        _ db: Database
    ) throws -> Row? {
        let row: Row?
        if let app {
            row = try Row.fetchOne(
                db, sql: "SELECT * FROM \(table) WHERE id = ? AND app = ?", arguments: [id, app.rawValue])
        } else {
            row = try Row.fetchOne(db, sql: "SELECT * FROM \(table) WHERE id = ?", arguments: [id])
        }
        guard let row, (row["expires_at_ms"] as Int64) > now, (row["attempts"] as Int) < maximumAttempts else {
            return nil
        }
        guard ConstantTime.equals([UInt8]((row["code_hash"] as Data?) ?? Data()), codeHash) else {
            try db.execute(sql: "UPDATE \(table) SET attempts = attempts + 1 WHERE id = ?", arguments: [id])
            return nil
        }
        return row
    }
}
