import PostgresNIO
import ServiceRuntime

/// The rows the PostgreSQL store writes and reads back as records (counters and owned items as
/// `SlpRules.encode` text, as on SQLite).
extension PostgresSlpStore {
    /// A new profile, unless the member has one (kept as it was): true when inserted.
    static func insert(_ profile: SlpProfileRecord, _ tx: PostgresTransaction) async throws -> Bool {
        try await !tx.query(
            """
            INSERT INTO slp_profile (user_id, gender, birth_year, birth_month, birth_day, email, favourite_study,
                searchable, partner_min_age, partner_max_age, avatar, background, owned_avatars, owned_backgrounds,
                reputation, created_at_ms)
            VALUES (\(profile.userID), \(profile.gender), \(profile.birthDate.year), \(profile.birthDate.month),
                \(profile.birthDate.day), \(profile.email), \(profile.favouriteStudy), \(profile.searchable),
                \(profile.partnerMinAge), \(profile.partnerMaxAge), \(profile.avatar), \(profile.background),
                \(SlpRules.encode(profile.ownedAvatars)), \(SlpRules.encode(profile.ownedBackgrounds)),
                \(SlpRules.encode(profile.reputation)), \(profile.createdAtMilliseconds))
            ON CONFLICT (user_id) DO NOTHING
            RETURNING 1
            """
        ).isEmpty
    }

    static func profile(_ userID: String, _ tx: PostgresTransaction, withComments: Bool = true) async throws
        -> SlpProfileRecord?
    {
        guard
            let found = try await tx.query(
                """
                SELECT p.*, u.nickname FROM slp_profile p JOIN app_user u ON u.id = p.user_id
                WHERE p.user_id = \(userID)
                """
            ).first
        else { return nil }
        let row = found.makeRandomAccess()
        return SlpProfileRecord(
            userID: try row["user_id"].decode(String.self), nickname: try row["nickname"].decode(String?.self) ?? "",
            gender: try row["gender"].decode(Int.self),
            birthDate: DateParts(
                year: try row["birth_year"].decode(Int.self), month: try row["birth_month"].decode(Int.self),
                day: try row["birth_day"].decode(Int.self)),
            email: try row["email"].decode(String.self), favouriteStudy: try row["favourite_study"].decode(String.self),
            searchable: try row["searchable"].decode(Bool.self),
            partnerMinAge: try row["partner_min_age"].decode(Int.self),
            partnerMaxAge: try row["partner_max_age"].decode(Int.self), avatar: try row["avatar"].decode(Int.self),
            background: try row["background"].decode(Int.self),
            ownedAvatars: SlpRules.decode(try row["owned_avatars"].decode(String.self)),
            ownedBackgrounds: SlpRules.decode(try row["owned_backgrounds"].decode(String.self)),
            reputation: SlpRules.decode(try row["reputation"].decode(String.self)),
            comments: withComments ? try await comments(of: [userID], limit: 100, tx)[userID] ?? [] : [],
            dodgeCount: try row["dodge_count"].decode(Int.self),
            lastDodgeAtMilliseconds: try row["last_dodge_at_ms"].decode(Int64?.self),
            createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self))
    }

    /// The newest `limit` comments received by each of `userIDs`, in one query (newest first; ties by
    /// insertion, SQLite's rowid).
    static func comments(of userIDs: [String], limit: Int, _ tx: PostgresTransaction) async throws
        -> [String: [String]]
    {
        guard !userIDs.isEmpty else { return [:] }
        var comments: [String: [String]] = [:]
        for row in try await tx.query(
            """
            SELECT ratee_id, comment FROM (
                SELECT ratee_id, comment, created_at_ms, seq,
                    row_number() OVER (PARTITION BY ratee_id ORDER BY created_at_ms DESC, seq DESC) AS rank
                FROM slp_rating WHERE ratee_id = ANY(\(userIDs)) AND comment <> ''
            ) newest
            WHERE rank <= \(limit) ORDER BY created_at_ms DESC, seq DESC
            """)
        {
            let (ratee, comment) = try row.decode((String, String).self)
            comments[ratee, default: []].append(comment)
        }
        return comments
    }

    /// A queued member's card: queue row, profile and nickname (`WHERE` added by the caller).
    static let personSQL = """
        SELECT q.id, q.user_id, q.latitude, q.longitude, q.studies, p.reputation, p.gender, p.avatar, p.background,
            p.birth_year, p.birth_month, p.birth_day, p.partner_min_age, p.partner_max_age, u.nickname
        FROM slp_queue q JOIN slp_profile p ON p.user_id = q.user_id JOIN app_user u ON u.id = q.user_id
        """

    /// One row of `personSQL`, decoded; the card lacks its distance and comments until the search adds them.
    struct Card {
        var queueID: Int64
        var person: SlpPersonRecord
        var birthDate: DateParts
        var partnerMinAge: Int
        var partnerMaxAge: Int

        init(_ row: PostgresRow) throws {
            let (queueID, userID, latitude, longitude, studies, reputation, gender, avatar, background) =
                try row.decode((Int64, String, Double, Double, String, String, Int, Int, Int).self)
            let cells = row.makeRandomAccess()
            self.queueID = queueID
            person = SlpPersonRecord(
                userID: userID, nickname: try cells[14].decode(String?.self) ?? "", latitude: latitude,
                longitude: longitude, metres: 0,
                studies: studies.isEmpty ? [] : studies.split(separator: "\n").map(String.init),
                reputation: SlpRules.decode(reputation), comments: [], gender: gender, avatar: avatar,
                background: background)
            birthDate = DateParts(
                year: try cells[9].decode(Int.self), month: try cells[10].decode(Int.self),
                day: try cells[11].decode(Int.self))
            partnerMinAge = try cells[12].decode(Int.self)
            partnerMaxAge = try cells[13].decode(Int.self)
        }
    }
}
