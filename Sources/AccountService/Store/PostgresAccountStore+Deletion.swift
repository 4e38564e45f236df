import PostgresNIO
import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// Deleting an account: everything AccountService holds of the user, the revocation and the jobs that
/// tell every other service, in one transaction.
extension PostgresAccountStore {
    // MARK: Deletion

    func deleteAccount(userID: String, now: Int64) async throws -> Bool {
        let events = self.events
        let revokedUsers = self.revokedUsers
        return try await postgres.write { tx in
            // The row lock waits for follows the user is making (their foreign key check holds the row) and
            // makes later ones wait for this deletion, so the counts given back below are all of them.
            guard
                let row = try await tx.query(
                    "SELECT app, email, phone FROM app_user WHERE id = \(userID) FOR UPDATE"
                ).first
            else { return false }
            let (app, email, phone) = try row.decode((String, String?, String).self)
            // SLP: ratings written taken back from the partners' counters, matches ended and removed. First
            // after the user's row: it locks the partners' profiles, which an SLP write between a partner and
            // someone else holds while it trims that other member's inbox; locking them after deleting
            // notifications (below) could wait in the opposite order and deadlock.
            try await PostgresSlpStore.forget(userID, tx)
            // What the user's mail, SMS and pushes are addressed to or carry: none goes out after this.
            var mentions: Set<String> = [userID, email ?? "", phone]
            // Follows the user made: each count given back once, for the rows this statement removed.
            try await tx.query(
                """
                WITH gone AS (DELETE FROM follow WHERE customer_id = \(userID) RETURNING designer_id)
                UPDATE designer SET follower_count = follower_count - 1 WHERE user_id IN (SELECT designer_id FROM gone)
                """)
            try await tx.query("DELETE FROM follow WHERE designer_id = \(userID)")
            // Other users' "visited designer" entries for this designer.
            try await tx.query("DELETE FROM recent_search WHERE kind = 'designer' AND value = \(userID)")
            if let email {
                try await tx.query(
                    """
                    DELETE FROM password_attempt
                    WHERE account = \(UserRecord.signInAccount(app: AppID(rawValue: app), email: email))
                    """)
            }
            // Identities: their unused phone codes and sign-up tickets name the number (the links go with
            // the user by cascade).
            for identity in try await tx.query(
                "SELECT app, kind, subject FROM user_identity WHERE user_id = \(userID)")
            {
                let (identityApp, kind, subject) = try identity.decode((String, String, String).self)
                if kind == "phone" {
                    mentions.insert(subject)
                    try await tx.query(
                        "DELETE FROM phone_verification WHERE app = \(identityApp) AND phone = \(subject)")
                }
                try await tx.query(
                    """
                    DELETE FROM sign_up_ticket WHERE app = \(identityApp) AND kind = \(kind) AND subject = \(subject)
                    """)
            }
            // Other users' notifications about this one (an SLP request names its sender): they go too.
            try await tx.query(
                "DELETE FROM notification WHERE user_id <> \(userID) AND strpos(data, \(userID)) > 0")
            // Mail, SMS and pushes not sent yet that name the user must not go out once the account is gone.
            for token in try await tx.query("SELECT token FROM device WHERE user_id = \(userID)") {
                mentions.insert(try token.decode(String.self))
            }
            try await events.outbox.dropOutsideMessages(mentioning: mentions, in: tx)
            // Sessions, the designer row, the user's own recent searches, push devices and notifications go
            // with the user (ON DELETE CASCADE).
            try await tx.query("DELETE FROM app_user WHERE id = \(userID)")
            let revocation = YediRuntime.RevokeUserRequest(
                userID: userID, revokedAtMs: now, keepUntilMs: now + RevokedUsers.retention.wholeMilliseconds)
            try await revokedUsers.revoke(
                userID: userID, revokedAt: revocation.revokedAtMs, keepUntil: revocation.keepUntilMs, in: tx)
            try await events.accountDeleted(revocation, in: tx)
            return true
        }
    }

    func deviceTokens(userID: String) async throws -> [String] {
        try await rows("SELECT token FROM device WHERE user_id = \(userID)").map { try $0.decode(String.self) }
    }
}
