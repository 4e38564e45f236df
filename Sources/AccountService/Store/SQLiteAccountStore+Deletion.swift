import Foundation
import GRDB
import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// Deleting an account: everything AccountService holds of the user, the revocation and the jobs that
/// tell every other service, in one transaction.
extension SQLiteAccountStore {
    // MARK: Deletion

    func deleteAccount(userID: String, now: Int64) async throws -> Bool {
        let events = self.events
        let revokedUsers = self.revokedUsers
        return try await database.write { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT app, email, phone FROM user WHERE id = ?", arguments: [userID])
            else { return false }
            let email: String? = row["email"]
            // What the user's mail, SMS and pushes are addressed to or carry: none goes out after this.
            var mentions: Set<String> = [userID, email ?? "", row["phone"] ?? ""]
            // Follows the user made: give back the counts before the rows go.
            try db.execute(
                sql: """
                    UPDATE designer SET follower_count = follower_count - 1
                    WHERE user_id IN (SELECT designer_id FROM follow WHERE customer_id = ?)
                    """,
                arguments: [userID])
            try db.execute(
                sql: "DELETE FROM follow WHERE customer_id = ? OR designer_id = ?", arguments: [userID, userID])
            try db.execute(
                sql: "DELETE FROM designer_search WHERE rowid = (SELECT rowid FROM designer WHERE user_id = ?)",
                arguments: [userID])
            // Other users' "visited designer" entries for this designer.
            try db.execute(
                sql: "DELETE FROM recent_search WHERE kind = 'designer' AND value = ?", arguments: [userID])
            if let email {
                try db.execute(
                    sql: "DELETE FROM password_attempt WHERE account = ?",
                    arguments: [UserRecord.signInAccount(app: AppID(rawValue: row["app"]), email: email)])
            }
            // Identities: their unused phone codes and sign-up tickets name the number (the links go with
            // the user by cascade).
            for identity in try Row.fetchAll(
                db, sql: "SELECT app, kind, subject FROM user_identity WHERE user_id = ?", arguments: [userID])
            {
                let (app, kind, subject): (String, String, String) = (
                    identity["app"], identity["kind"], identity["subject"]
                )
                if kind == "phone" {
                    mentions.insert(subject)
                    try db.execute(
                        sql: "DELETE FROM phone_verification WHERE app = ? AND phone = ?", arguments: [app, subject])
                }
                try db.execute(
                    sql: "DELETE FROM sign_up_ticket WHERE app = ? AND kind = ? AND subject = ?",
                    arguments: [app, kind, subject])
            }
            // Other users' notifications about this one (an SLP request names its sender): they go too.
            try db.execute(
                sql: "DELETE FROM notification WHERE user_id != ? AND instr(data, ?) > 0", arguments: [userID, userID])
            // Mail, SMS and pushes not sent yet that name the user (a push to someone else carrying their id,
            // a code to their number, a push to their device): once the account is gone they must not go out.
            mentions.formUnion(
                try String.fetchAll(db, sql: "SELECT token FROM device WHERE user_id = ?", arguments: [userID]))
            try events.outbox.dropOutsideMessages(mentioning: mentions, in: db)
            // SLP: ratings written taken back from the partners' counters, matches ended and removed.
            try SQLiteSlpStore.forget(userID, db)
            // Sessions, the designer row, the user's own recent searches, push devices and notifications go
            // with the user (ON DELETE CASCADE).
            try db.execute(sql: "DELETE FROM user WHERE id = ?", arguments: [userID])
            let revocation = YediRuntime.RevokeUserRequest(
                userID: userID, revokedAtMs: now, keepUntilMs: now + RevokedUsers.retention.wholeMilliseconds)
            try revokedUsers.revoke(
                userID: userID, revokedAt: revocation.revokedAtMs, keepUntil: revocation.keepUntilMs, in: db)
            try events.accountDeleted(revocation, in: db)
            return true
        }
    }

    func deviceTokens(userID: String) async throws -> [String] {
        try await database.read { db in
            try String.fetchAll(db, sql: "SELECT token FROM device WHERE user_id = ?", arguments: [userID])
        }
    }
}
