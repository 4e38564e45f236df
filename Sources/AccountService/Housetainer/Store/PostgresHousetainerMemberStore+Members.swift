import PostgresNIO
import RPCAccess
import ServiceRuntime

/// A member's page and what changes it, on PostgreSQL.
extension PostgresHousetainerMemberStore {
    /// One statement, so the page and its buddies are one snapshot.
    func member(id: String, app: AppID) async throws -> HousetainerMemberRecord? {
        guard
            let row = try await rows(
                """
                SELECT u.id, u.nickname, u.gender, u.birth_year, u.birth_month, u.birth_day, u.created_at_ms,
                    u.profile_image_id, m.type, m.invited, m.inviter_id, i.nickname AS inviter_nickname,
                    ARRAY(
                        SELECT COALESCE(b.nickname, '') FROM housetainer_invitation j
                        JOIN app_user b ON b.id = j.joined_user_id
                        WHERE j.app = \(app.rawValue) AND j.inviter_id = u.id AND j.status = 'J'
                        ORDER BY j.joined_at_ms, j.id COLLATE "C"
                    ) AS buddies
                FROM app_user u LEFT JOIN housetainer_member m ON m.user_id = u.id
                LEFT JOIN app_user i ON i.id = m.inviter_id
                WHERE u.id = \(id) AND u.app = \(app.rawValue)
                """
            ).first?.makeRandomAccess()
        else { return nil }
        let year = try row["birth_year"].decode(Int?.self)
        let month = try row["birth_month"].decode(Int?.self)
        let day = try row["birth_day"].decode(Int?.self)
        let invited = try row["invited"].decode(Bool?.self) ?? false
        let inviterID = try row["inviter_id"].decode(String?.self)
        return HousetainerMemberRecord(
            id: try row["id"].decode(String.self), nickname: try row["nickname"].decode(String?.self) ?? "",
            type: try row["type"].decode(String?.self) ?? "a",
            inviterNickname: try row["inviter_nickname"].decode(String?.self),
            inviterLeft: invited && inviterID == nil,
            buddies: try row["buddies"].decode([String].self), gender: try row["gender"].decode(Int.self),
            birthday: year.flatMap { year in
                month.flatMap { month in day.map { DateParts(year: year, month: month, day: $0) } }
            },
            photoImageID: try row["profile_image_id"].decode(String.self),
            createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self))
    }

    func updateMember(id: String, app: AppID, _ update: HousetainerMemberUpdate) async throws {
        let events = self.events
        do {
            try await postgres.write { tx in
                guard
                    try await !tx.query(
                        """
                        UPDATE app_user SET gender = \(update.gender), birth_year = \(update.birthday?.year),
                            birth_month = \(update.birthday?.month), birth_day = \(update.birthday?.day),
                            nickname = \(update.nickname), name = \(update.nickname),
                            profile_image_id = \(update.photoImageID)
                        WHERE id = \(id) AND app = \(app.rawValue)
                        RETURNING 1
                        """
                    ).isEmpty
                else { throw HousetainerStoreError.notFound }
                try await events.publicFieldsChanged(userID: id, in: tx)
            }
        } catch let violation as PostgresConstraintViolation where violation.constraint == "app_user_nickname_in_app" {
            throw HousetainerStoreError.nicknameTaken
        }
    }

    func setMemberType(id: String, app: AppID, type: String) async throws {
        let events = self.events
        try await postgres.write { tx in
            guard
                try await !tx.query(
                    """
                    UPDATE housetainer_member SET type = \(type) WHERE user_id = \(id) AND app = \(app.rawValue)
                    RETURNING 1
                    """
                ).isEmpty
            else { throw HousetainerStoreError.notFound }
            try await events.publicFieldsChanged(userID: id, in: tx)
        }
    }
}
