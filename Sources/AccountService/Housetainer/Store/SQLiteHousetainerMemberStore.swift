import Foundation
import GRDB
import RPCAccess
import ServiceRuntime
import YediProto

/// `HousetainerMemberStore` on AccountService's SQLite database. Accounts are made through the account
/// store's own insert (`accounts.insertAccount`), inside the signup's transaction.
struct SQLiteHousetainerMemberStore: HousetainerMemberStore {
    let database: ServiceDatabase
    let accounts: SQLiteAccountStore
    /// Mails invitations and tells the directories of a new nickname, in the transactions that cause them.
    let events: AccountEvents

    func signIn(identity: VerifiedIdentity, app: AppID, now: Int64) async throws -> String? {
        try await database.write { db in
            if let id = try String.fetchOne(
                db, sql: "SELECT user_id FROM user_identity WHERE app = ? AND kind = ? AND subject = ?",
                arguments: [app.rawValue, identity.kind, identity.subject])
            {
                return id
            }
            guard let email = identity.email?.lowercased(), !email.isEmpty,
                let id = try String.fetchOne(
                    db, sql: "SELECT id FROM user WHERE app = ? AND email = ?", arguments: [app.rawValue, email])
            else { return nil }
            // The address identifies the member: a second provider of the same address joins the account.
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO user_identity (app, kind, subject, user_id, created_at_ms)
                    VALUES (?, ?, ?, ?, ?)
                    """,
                arguments: [app.rawValue, identity.kind, identity.subject, id, now])
            return id
        }
    }

    func invitation(code: String, app: AppID) async throws -> InvitationRecord? {
        try await database.read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT i.*, u.nickname AS inviter_nickname FROM housetainer_invitation i
                    LEFT JOIN user u ON u.id = i.inviter_id
                    WHERE i.app = ? AND i.code = ?
                    """,
                arguments: [app.rawValue, code]
            ).map(Self.invitation)
        }
    }

    func createInvitation(
        _ invitation: InvitationRecord, quota: Int, lifetime: Int64, draw: @escaping @Sendable () -> String,
        mail: @escaping @Sendable (InvitationRecord) -> YediRuntime.MailMessage
    ) async throws -> InvitationRecord {
        let events = self.events
        return try await database.write { db in
            let app = invitation.app.rawValue
            guard
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM user WHERE app = ? AND email = ?",
                    arguments: [app, invitation.inviteeEmail]) != true
            else { throw HousetainerStoreError.alreadyMember }
            // S codes within their lifetime and J codes count; expired ones never do.
            let held =
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT count(*) FROM housetainer_invitation
                        WHERE app = ? AND inviter_id = ? AND (status = 'J' OR created_at_ms > ?)
                        """,
                    arguments: [app, invitation.inviterID, invitation.createdAtMilliseconds - lifetime]) ?? 0
            guard held < quota else { throw HousetainerStoreError.quotaExceeded }
            var stored = invitation
            // Codes are unique by the index: a collision draws again.
            repeat {
                stored.code = draw()
                try db.execute(
                    sql: """
                        INSERT OR IGNORE INTO housetainer_invitation
                            (id, app, code, inviter_id, issued_by, invitee_email, invitee_name, status, created_at_ms)
                        VALUES (?, ?, ?, ?, ?, ?, ?, 'S', ?)
                        """,
                    arguments: [
                        stored.id, app, stored.code, stored.inviterID, stored.issuedBy, stored.inviteeEmail,
                        stored.inviteeName, stored.createdAtMilliseconds,
                    ])
            } while db.changesCount == 0
            try events.mail(mail(stored), in: db)
            return stored
        }
    }

    func invitations(inviterID: String, app: AppID) async throws -> [InvitationRecord] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM housetainer_invitation WHERE app = ? AND inviter_id = ?
                    ORDER BY created_at_ms DESC, id DESC
                    """,
                arguments: [app.rawValue, inviterID]
            ).map(Self.invitation)
        }
    }

    func signUp(_ signUp: HousetainerSignUp) async throws {
        let accounts = self.accounts
        do {
            try await database.write { db in
                let app = signUp.ticket.app.rawValue
                try db.execute(
                    sql: "DELETE FROM sign_up_ticket WHERE ticket_hash = ? AND app = ? AND expires_at_ms > ?",
                    arguments: [Data(signUp.ticket.ticketHash), app, signUp.now])
                guard db.changesCount == 1 else { throw HousetainerStoreError.ticketUnknown }
                try accounts.insertAccount(signUp.user, designer: nil, session: signUp.session, db)
                try db.execute(
                    sql:
                        "INSERT INTO user_identity (app, kind, subject, user_id, created_at_ms) VALUES (?, ?, ?, ?, ?)",
                    arguments: [
                        app, signUp.ticket.identity.kind, signUp.ticket.identity.subject, signUp.user.id, signUp.now,
                    ])
                var inviterID: String?
                if let code = signUp.code {
                    inviterID = try Self.useCode(code, signUp: signUp, db)
                }
                // `invited` 0 for a code an admin issued: no inviter who could have "left".
                try db.execute(
                    sql: """
                        INSERT INTO housetainer_member (user_id, app, type, inviter_id, invited, created_at_ms)
                        VALUES (?, ?, 'a', ?, ?, ?)
                        """,
                    arguments: [signUp.user.id, app, inviterID, inviterID != nil, signUp.now])
                for (kind, version) in signUp.terms.sorted(by: { $0.key < $1.key }) {
                    try db.execute(
                        sql:
                            "INSERT INTO housetainer_terms (user_id, kind, version, accepted_at_ms) VALUES (?, ?, ?, ?)",
                        arguments: [signUp.user.id, kind, version, signUp.now])
                }
            }
        } catch let error as DatabaseError where SQLiteAccountStore.isNicknameTaken(error) {
            throw HousetainerStoreError.nicknameTaken
        } catch let error as DatabaseError
            where SQLiteAccountStore.isEmailTaken(error)
            || (error.resultCode == .SQLITE_CONSTRAINT && error.message?.contains("user_identity.") == true)
        {
            throw HousetainerStoreError.identityTaken
        }
    }

    /// Turns the code J for the new member, or says why it cannot: the inviter's id (nil for a code an
    /// admin issued: the member was nobody's invitee).
    private static func useCode(_ code: String, signUp: HousetainerSignUp, _ db: Database) throws -> String? {
        let app = signUp.ticket.app.rawValue
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT * FROM housetainer_invitation WHERE app = ? AND code = ?", arguments: [app, code])
        else { throw HousetainerStoreError.codeUnknown }
        let invitation = invitation(row)
        guard invitation.inviteeEmail == signUp.ticket.identity.email?.lowercased() else {
            throw HousetainerStoreError.codeForAnotherAddress
        }
        guard invitation.status(now: signUp.now, lifetime: signUp.codeLifetime) == .sent else {
            throw HousetainerStoreError.codeUsed
        }
        try db.execute(
            sql: """
                UPDATE housetainer_invitation SET status = 'J', joined_user_id = ?, joined_at_ms = ?
                WHERE id = ? AND status = 'S'
                """,
            arguments: [signUp.user.id, signUp.now, invitation.id])
        guard db.changesCount == 1 else { throw HousetainerStoreError.codeUsed }
        return invitation.inviterID
    }

    func joinWaitlist(_ entry: WaitlistRecord) async throws -> Bool {
        try await database.write { db in
            let existed =
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM housetainer_waitlist WHERE app = ? AND email = ?",
                    arguments: [entry.app.rawValue, entry.email]) ?? false
            try db.execute(
                sql: """
                    INSERT INTO housetainer_waitlist (app, email, sns_url, instagram_id, created_at_ms, updated_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (app, email) DO UPDATE SET sns_url = excluded.sns_url,
                        instagram_id = excluded.instagram_id, updated_at_ms = excluded.updated_at_ms
                    """,
                arguments: [
                    entry.app.rawValue, entry.email, entry.snsURL, entry.instagramID, entry.createdAtMilliseconds,
                    entry.updatedAtMilliseconds,
                ])
            return !existed
        }
    }

    func waitlist(app: AppID, after: PagePosition<Int64>?, limit: Int) async throws -> [WaitlistRecord] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM housetainer_waitlist
                    WHERE app = ? AND (? IS NULL OR (created_at_ms, email) < (?, ?))
                    ORDER BY created_at_ms DESC, email DESC LIMIT ?
                    """,
                arguments: [app.rawValue, after?.key, after?.key, after?.id, limit]
            ).map { row in
                WaitlistRecord(
                    app: app, email: row["email"], snsURL: row["sns_url"], instagramID: row["instagram_id"],
                    createdAtMilliseconds: row["created_at_ms"], updatedAtMilliseconds: row["updated_at_ms"])
            }
        }
    }

    func member(id: String, app: AppID) async throws -> HousetainerMemberRecord? {
        try await database.read { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT u.id, u.nickname, u.gender, u.birth_year, u.birth_month, u.birth_day, u.created_at_ms,
                            u.profile_image_id,
                            m.type, m.invited, m.inviter_id, i.nickname AS inviter_nickname
                        FROM user u LEFT JOIN housetainer_member m ON m.user_id = u.id
                        LEFT JOIN user i ON i.id = m.inviter_id
                        WHERE u.id = ? AND u.app = ?
                        """,
                    arguments: [id, app.rawValue])
            else { return nil }
            let buddies = try String.fetchAll(
                db,
                sql: """
                    SELECT u.nickname FROM housetainer_invitation i JOIN user u ON u.id = i.joined_user_id
                    WHERE i.app = ? AND i.inviter_id = ? AND i.status = 'J' ORDER BY i.joined_at_ms, i.id
                    """,
                arguments: [app.rawValue, id])
            let year: Int? = row["birth_year"]
            let month: Int? = row["birth_month"]
            let day: Int? = row["birth_day"]
            let inviterID: String? = row["inviter_id"]
            return HousetainerMemberRecord(
                id: row["id"], nickname: row["nickname"] ?? "", type: row["type"] ?? "a",
                inviterNickname: row["inviter_nickname"],
                inviterLeft: (row["invited"] as Bool? ?? false) && inviterID == nil, buddies: buddies,
                gender: row["gender"] ?? 0,
                birthday: year.flatMap { year in
                    month.flatMap { month in day.map { DateParts(year: year, month: month, day: $0) } }
                },
                photoImageID: row["profile_image_id"] ?? "", createdAtMilliseconds: row["created_at_ms"])
        }
    }

    func updateMember(id: String, app: AppID, _ update: HousetainerMemberUpdate) async throws {
        let events = self.events
        do {
            try await database.write { db in
                try db.execute(
                    sql: """
                        UPDATE user SET gender = ?, birth_year = ?, birth_month = ?, birth_day = ?, nickname = ?,
                            name = ?, profile_image_id = ?
                        WHERE id = ? AND app = ?
                        """,
                    arguments: [
                        update.gender, update.birthday?.year, update.birthday?.month, update.birthday?.day,
                        update.nickname, update.nickname, update.photoImageID, id, app.rawValue,
                    ])
                guard db.changesCount == 1 else { throw HousetainerStoreError.notFound }
                try events.publicFieldsChanged(userID: id, in: db)
            }
        } catch let error as DatabaseError where SQLiteAccountStore.isNicknameTaken(error) {
            throw HousetainerStoreError.nicknameTaken
        }
    }

    func setMemberType(id: String, app: AppID, type: String) async throws {
        let events = self.events
        try await database.write { db in
            try db.execute(
                sql: "UPDATE housetainer_member SET type = ? WHERE user_id = ? AND app = ?",
                arguments: [type, id, app.rawValue])
            guard db.changesCount == 1 else { throw HousetainerStoreError.notFound }
            try events.publicFieldsChanged(userID: id, in: db)
        }
    }

    static func invitation(_ row: Row) -> InvitationRecord {
        InvitationRecord(
            id: row["id"], app: AppID(rawValue: row["app"]), code: row["code"], inviterID: row["inviter_id"],
            inviteeEmail: row["invitee_email"], inviteeName: row["invitee_name"],
            stored: InvitationRecord.Status(rawValue: row["status"]) ?? .sent,
            createdAtMilliseconds: row["created_at_ms"], joinedAtMilliseconds: row["joined_at_ms"],
            inviterNickname: row["inviter_nickname"], issuedBy: row["issued_by"])
    }
}
