import PostgresNIO
import ServiceRuntime

/// A Housetainer signup on PostgreSQL: the ticket used up, the account, its identity, the code claimed,
/// the member row and the terms, in one transaction, in SQLite's order (so the same refusal wins).
extension PostgresHousetainerMemberStore {
    func signUp(_ signUp: HousetainerSignUp) async throws {
        let accounts = self.accounts
        do {
            try await postgres.write { tx in
                let app = signUp.ticket.app.rawValue
                // Of two replicas using one ticket, the second waits for the first's commit, then deletes
                // nothing.
                guard
                    try await !tx.query(
                        """
                        DELETE FROM sign_up_ticket
                        WHERE ticket_hash = \(PostgresAccountStore.bytea(signUp.ticket.ticketHash)) AND app = \(app)
                            AND expires_at_ms > \(signUp.now)
                        RETURNING 1
                        """
                    ).isEmpty
                else { throw HousetainerStoreError.ticketUnknown }
                try await accounts.insertAccount(signUp.user, designer: nil, session: signUp.session, tx)
                let identity = signUp.ticket.identity
                try await tx.query(
                    """
                    INSERT INTO user_identity (app, kind, subject, user_id, created_at_ms)
                    VALUES (\(app), \(identity.kind), \(identity.subject), \(signUp.user.id), \(signUp.now))
                    """)
                var inviterID: String?
                if let code = signUp.code {
                    inviterID = try await Self.claim(code, signUp: signUp, tx)
                }
                // `invited` false for a code an admin issued: no inviter who could have "left".
                try await tx.query(
                    """
                    INSERT INTO housetainer_member (user_id, app, type, inviter_id, invited, created_at_ms)
                    VALUES (\(signUp.user.id), \(app), 'a', \(inviterID), \(inviterID != nil), \(signUp.now))
                    """)
                for (kind, version) in signUp.terms.sorted(by: { $0.key < $1.key }) {
                    try await tx.query(
                        """
                        INSERT INTO housetainer_terms (user_id, kind, version, accepted_at_ms)
                        VALUES (\(signUp.user.id), \(kind), \(version), \(signUp.now))
                        """)
                }
            }
        } catch let violation as PostgresConstraintViolation where violation.isUniqueViolation {
            switch violation.constraint {
            case "app_user_nickname_in_app": throw HousetainerStoreError.nicknameTaken
            case "app_user_email_in_app", "user_identity_key": throw HousetainerStoreError.identityTaken
            default: throw violation
            }
        }
    }

    /// Turns the code J for the new member in one statement, or says why it cannot: the inviter's id (nil
    /// for a code an admin issued). The `status = 'S'` condition is what uses a code once: a second
    /// replica claiming it at once waits for the first's row lock, then finds the row J and claims nothing.
    static func claim(_ code: String, signUp: HousetainerSignUp, _ tx: PostgresTransaction) async throws -> String? {
        let app = signUp.ticket.app.rawValue
        let email = signUp.ticket.identity.email?.lowercased()
        // The inviter's account first, as the member row's foreign key would later: a deletion of the
        // inviter holds it while its cascade removes their invitations, so claiming the row first and
        // waiting for the account second could deadlock. Waiting here, the claim then finds no row.
        try await tx.query(
            """
            SELECT 1 FROM app_user WHERE id = (
                SELECT inviter_id FROM housetainer_invitation WHERE app = \(app) AND code = \(code))
            FOR KEY SHARE
            """)
        if let claimed = try await tx.query(
            """
            UPDATE housetainer_invitation SET status = 'J', joined_user_id = \(signUp.user.id),
                joined_at_ms = \(signUp.now)
            WHERE app = \(app) AND code = \(code) AND invitee_email = \(email) AND status = 'S'
                AND created_at_ms + \(signUp.codeLifetime) > \(signUp.now)
            RETURNING inviter_id
            """
        ).first {
            return try claimed.decode(String?.self)
        }
        // Nothing claimed: the refusal, in SQLite's order.
        guard
            let row = try await tx.query(
                "SELECT * FROM housetainer_invitation WHERE app = \(app) AND code = \(code)"
            ).first
        else { throw HousetainerStoreError.codeUnknown }
        guard try invitation(row).inviteeEmail == email else { throw HousetainerStoreError.codeForAnotherAddress }
        throw HousetainerStoreError.codeUsed
    }
}
