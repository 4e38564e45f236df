import Foundation
import GRDB

/// SignUp in one transaction (issue 28): the platform's identity sign-up (`completeIdentitySignUp`'s
/// rows) with SLP's profile and the push device beside it.
extension SQLiteSlpStore {
    func signUp(_ signUp: SlpSignUpRecord) async throws -> SlpSignUpOutcome {
        let ticket = signUp.ticket
        do {
            return try await database.write { db in
                if try Self.ticketUsed(ticket.ticketHash, now: signUp.now, db) { return .alreadyRegistered }
                let linked = try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM user_identity WHERE app = ? AND kind = ? AND subject = ?",
                    arguments: [ticket.app.rawValue, ticket.identity.kind, ticket.identity.subject])
                if linked == true { return .alreadyRegistered }
                try db.execute(
                    sql: "DELETE FROM sign_up_ticket WHERE ticket_hash = ? AND app = ? AND expires_at_ms > ?",
                    arguments: [Data(ticket.ticketHash), ticket.app.rawValue, signUp.now])
                guard db.changesCount == 1 else { return .unknownTicket }
                // The user row has no designer: `AccountEvents.accountCreated` tells nobody of it.
                try SQLiteAccountStore.insert(signUp.user, db)
                try SQLiteAccountStore.insert(signUp.session, db)
                try db.execute(
                    sql:
                        "INSERT INTO user_identity (app, kind, subject, user_id, created_at_ms) VALUES (?, ?, ?, ?, ?)",
                    arguments: [
                        ticket.app.rawValue, ticket.identity.kind, ticket.identity.subject, signUp.user.id, signUp.now,
                    ])
                try Self.insert(signUp.profile, db)
                if let device = signUp.device {
                    _ = try SQLiteNotificationStore.register(device, keep: signUp.keepDevices, db)
                }
                try db.execute(
                    sql: "INSERT INTO slp_used_ticket (ticket_hash, user_id, expires_at_ms) VALUES (?, ?, ?)",
                    arguments: [Data(ticket.ticketHash), signUp.user.id, ticket.expiresAtMilliseconds])
                return .signedUp
            }
        } catch let error as DatabaseError where SQLiteAccountStore.isNicknameTaken(error) {
            return .nicknameTaken
        }
    }

    func ticketUsed(hash: [UInt8], now: Int64) async throws -> Bool {
        try await database.read { db in try Self.ticketUsed(hash, now: now, db) }
    }

    static func ticketUsed(_ hash: [UInt8], now: Int64, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db, sql: "SELECT 1 FROM slp_used_ticket WHERE ticket_hash = ? AND expires_at_ms > ?",
            arguments: [Data(hash), now]) == true
    }
}
