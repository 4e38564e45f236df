import Logging
import PostgresNIO
import RPCAccess
import ServiceRuntime
import YediProto

/// `HousetainerMemberStore` on PostgreSQL, for several replicas on one database. Accounts are made through
/// the account store's own insert (`accounts.insertAccount`), inside the signup's transaction. What
/// SQLite's single writer decided alone is held here by the database: a code is claimed by one
/// conditional UPDATE (`+SignUp`), an inviter's quota is counted under a lock on the inviter's row, the
/// waitlist is one upsert, nicknames and codes are unique indexes.
struct PostgresHousetainerMemberStore: HousetainerMemberStore {
    let accounts: PostgresAccountStore
    /// Mails invitations and tells the directories of a new nickname, in the transactions that cause them.
    let events: PostgresAccountEvents
    var postgres: ServicePostgres { accounts.postgres }

    static let logger = Logger(label: "yedi.account.housetainer.postgres")

    func signIn(identity: VerifiedIdentity, app: AppID, now: Int64) async throws -> String? {
        try await postgres.write { tx in
            if let row = try await tx.query(
                """
                SELECT user_id FROM user_identity
                WHERE app = \(app.rawValue) AND kind = \(identity.kind) AND subject = \(identity.subject)
                """
            ).first {
                return try row.decode(String.self)
            }
            guard let email = identity.email?.lowercased(), !email.isEmpty,
                let row = try await tx.query(
                    // Key-share locked, as the identity's foreign key would: a deletion committing
                    // meanwhile makes this find no one instead of failing the insert below.
                    "SELECT id FROM app_user WHERE app = \(app.rawValue) AND email = \(email) FOR KEY SHARE"
                ).first
            else { return nil }
            let id = try row.decode(String.self)
            // The address identifies the member: a second provider of the same address joins the account
            // (a concurrent first sign-in of the same identity links it once).
            try await tx.query(
                """
                INSERT INTO user_identity (app, kind, subject, user_id, created_at_ms)
                VALUES (\(app.rawValue), \(identity.kind), \(identity.subject), \(id), \(now))
                ON CONFLICT DO NOTHING
                """)
            return id
        }
    }

    func invitation(code: String, app: AppID) async throws -> InvitationRecord? {
        try await rows(
            """
            SELECT i.*, u.nickname AS inviter_nickname FROM housetainer_invitation i
            LEFT JOIN app_user u ON u.id = i.inviter_id
            WHERE i.app = \(app.rawValue) AND i.code = \(code)
            """
        ).first.map(Self.invitation)
    }

    /// The inviter's row is locked first (`FOR NO KEY UPDATE`: it still lets rows that merely reference
    /// the inviter in), so two replicas creating the same member's invitations count one after the
    /// other: the second sees the first's row. An admin's code has no inviter, no lock and no quota.
    func createInvitation(
        _ invitation: InvitationRecord, quota: Int, lifetime: Int64, draw: @escaping @Sendable () -> String,
        mail: @escaping @Sendable (InvitationRecord) -> YediRuntime.MailMessage
    ) async throws -> InvitationRecord {
        let events = self.events
        return try await postgres.write { tx in
            let app = invitation.app.rawValue
            if let inviterID = invitation.inviterID {
                try await tx.query("SELECT 1 FROM app_user WHERE id = \(inviterID) FOR NO KEY UPDATE")
            }
            guard
                try await tx.query(
                    "SELECT 1 FROM app_user WHERE app = \(app) AND email = \(invitation.inviteeEmail)"
                ).isEmpty
            else { throw HousetainerStoreError.alreadyMember }
            // S codes within their lifetime and J codes count; expired ones never do.
            let held =
                try await tx.query(
                    """
                    SELECT count(*) FROM housetainer_invitation
                    WHERE app = \(app) AND inviter_id = \(invitation.inviterID)
                        AND (status = 'J' OR created_at_ms > \(invitation.createdAtMilliseconds - lifetime))
                    """
                ).first?.decode(Int.self) ?? 0
            guard held < quota else { throw HousetainerStoreError.quotaExceeded }
            var stored = invitation
            // Codes are unique by the constraint: a collision draws again (any other conflict is an error).
            repeat {
                stored.code = draw()
            } while try await tx.query(
                """
                INSERT INTO housetainer_invitation
                    (id, app, code, inviter_id, issued_by, invitee_email, invitee_name, status, created_at_ms)
                VALUES (\(stored.id), \(app), \(stored.code), \(stored.inviterID), \(stored.issuedBy),
                    \(stored.inviteeEmail), \(stored.inviteeName), 'S', \(stored.createdAtMilliseconds))
                ON CONFLICT ON CONSTRAINT housetainer_invitation_code DO NOTHING
                RETURNING 1
                """
            ).isEmpty
            try await events.mail(mail(stored), in: tx)
            return stored
        }
    }

    func invitations(inviterID: String, app: AppID) async throws -> [InvitationRecord] {
        try await rows(
            """
            SELECT * FROM housetainer_invitation WHERE app = \(app.rawValue) AND inviter_id = \(inviterID)
            ORDER BY created_at_ms DESC, id COLLATE "C" DESC
            """
        ).map(Self.invitation)
    }

    /// One upsert: of two replicas adding the same address at once, one inserts (true), the other
    /// updates (false). `xmax` is 0 on a row this statement inserted.
    func joinWaitlist(_ entry: WaitlistRecord) async throws -> Bool {
        try await postgres.write { tx in
            try await tx.query(
                """
                INSERT INTO housetainer_waitlist (app, email, sns_url, instagram_id, created_at_ms, updated_at_ms)
                VALUES (\(entry.app.rawValue), \(entry.email), \(entry.snsURL), \(entry.instagramID),
                    \(entry.createdAtMilliseconds), \(entry.updatedAtMilliseconds))
                ON CONFLICT (app, email) DO UPDATE SET sns_url = excluded.sns_url,
                    instagram_id = excluded.instagram_id, updated_at_ms = excluded.updated_at_ms
                RETURNING xmax = 0
                """
            ).first?.decode(Bool.self) ?? false
        }
    }

    func waitlist(app: AppID, after: PagePosition<Int64>?, limit: Int) async throws -> [WaitlistRecord] {
        let query: PostgresQuery
        if let after {
            query = """
                SELECT email, sns_url, instagram_id, created_at_ms, updated_at_ms FROM housetainer_waitlist
                WHERE app = \(app.rawValue) AND (created_at_ms, email COLLATE "C") < (\(after.key), \(after.id))
                ORDER BY created_at_ms DESC, email COLLATE "C" DESC LIMIT \(limit)
                """
        } else {
            query = """
                SELECT email, sns_url, instagram_id, created_at_ms, updated_at_ms FROM housetainer_waitlist
                WHERE app = \(app.rawValue)
                ORDER BY created_at_ms DESC, email COLLATE "C" DESC LIMIT \(limit)
                """
        }
        return try await rows(query).map { row in
            let (email, snsURL, instagramID, created, updated) = try row.decode(
                (String, String, String, Int64, Int64).self)
            return WaitlistRecord(
                app: app, email: email, snsURL: snsURL, instagramID: instagramID, createdAtMilliseconds: created,
                updatedAtMilliseconds: updated)
        }
    }

    /// One statement outside a transaction (one snapshot), its rows collected.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await postgres.read { connection in try await connection.query(query, logger: Self.logger).collect() }
    }

    /// A row of `housetainer_invitation` (`*`), with `inviter_nickname` where the query joined it.
    static func invitation(_ row: PostgresRow) throws -> InvitationRecord {
        let row = row.makeRandomAccess()
        return InvitationRecord(
            id: try row["id"].decode(String.self), app: AppID(rawValue: try row["app"].decode(String.self)),
            code: try row["code"].decode(String.self), inviterID: try row["inviter_id"].decode(String?.self),
            inviteeEmail: try row["invitee_email"].decode(String.self),
            inviteeName: try row["invitee_name"].decode(String.self),
            stored: InvitationRecord.Status(rawValue: try row["status"].decode(String.self)) ?? .sent,
            createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self),
            joinedAtMilliseconds: try row["joined_at_ms"].decode(Int64?.self),
            inviterNickname: row.contains("inviter_nickname")
                ? try row["inviter_nickname"].decode(String?.self) : nil,
            issuedBy: try row["issued_by"].decode(String?.self))
    }
}
