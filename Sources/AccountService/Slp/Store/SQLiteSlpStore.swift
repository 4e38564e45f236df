import GRDB
import RPCAccess
import ServiceRuntime

/// `SlpStore` on AccountService's SQLite database: profiles, the queue and its positions, and the
/// nearby search. Requests, matches and ratings are in `SQLiteSlpStore+Matches.swift`.
struct SQLiteSlpStore: SlpStore {
    static let app: AppID = "slp"

    let database: ServiceDatabase
    /// Tells the requested member (inbox and push) in the request's transaction; nil in store tests.
    let notifier: Notifier?
    /// Tells ChatService to open and close match rooms, in the transactions that start and end matches;
    /// nil in store tests.
    let events: AccountEvents?

    func createProfile(_ profile: SlpProfileRecord) async throws -> Bool {
        try await database.write { db in
            guard
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM user WHERE id = ? AND app = ?",
                    arguments: [profile.userID, Self.app.rawValue]) == true
            else { throw SlpStoreError.unknownUser }
            try Self.insert(profile, db)
            return db.changesCount == 1
        }
    }

    func profile(userID: String) async throws -> SlpProfileRecord? {
        try await database.read { db in try Self.profile(userID, db) }
    }

    func updateProfile(userID: String, _ update: SlpProfileUpdate) async throws -> SlpProfileRecord {
        try await database.write { db in
            guard let current = try Self.profile(userID, db) else { throw SlpStoreError.noProfile }
            guard current.ownedAvatars.contains(update.avatar) else { throw SlpStoreError.notOwned("avatar") }
            guard current.ownedBackgrounds.contains(update.background) else {
                throw SlpStoreError.notOwned("background")
            }
            try db.execute(
                sql: """
                    UPDATE slp_profile SET gender = ?, favourite_study = ?, searchable = ?, partner_min_age = ?,
                        partner_max_age = ?, avatar = ?, background = ?
                    WHERE user_id = ?
                    """,
                arguments: [
                    update.gender, update.favouriteStudy, update.searchable, update.partnerMinAge,
                    update.partnerMaxAge, update.avatar, update.background, userID,
                ])
            guard let updated = try Self.profile(userID, db) else { throw SlpStoreError.noProfile }
            return updated
        }
    }

    func state(userID: String) async throws -> SlpStateRecord {
        try await database.read { db in
            guard try Self.hasProfile(userID, db) else { throw SlpStoreError.noProfile }
            let queued = try Self.queueID(of: userID, db) != nil
            let last = try Row.fetchOne(
                db,
                sql: """
                    SELECT mm.match_id, mm.partner_id, mm.active, m.ended_by, m.end_reason, u.nickname,
                        EXISTS (SELECT 1 FROM slp_rating r WHERE r.match_id = mm.match_id AND r.rater_id = mm.user_id)
                            AS rated
                    FROM slp_match_member mm JOIN slp_match m ON m.id = mm.match_id
                    LEFT JOIN user u ON u.id = mm.partner_id
                    WHERE mm.user_id = ? ORDER BY mm.created_at_ms DESC, mm.rowid DESC LIMIT 1
                    """,
                arguments: [userID])
            guard let last else {
                return SlpStateRecord(
                    queued: queued, active: nil, partnerNickname: "", lastMatchID: nil, dodged: false, rated: false)
            }
            let active: Bool = last["active"]
            let partnerID: String = last["partner_id"]
            let endedBy: String? = last["ended_by"]
            let reason: String? = last["end_reason"]
            return SlpStateRecord(
                queued: queued,
                active: active ? SlpActiveMatch(matchID: last["match_id"], partnerID: partnerID) : nil,
                partnerNickname: active ? (last["nickname"] ?? "") : "", lastMatchID: last["match_id"],
                dodged: reason == "dodge" && endedBy == partnerID, rated: last["rated"])
        }
    }

    func enterQueue(userID: String, at point: GeoPoint, studies: [String], now: Int64) async throws
        -> SlpEnterOutcome
    {
        try await database.write { db in
            guard let profile = try Self.profile(userID, db, withComments: false) else {
                throw SlpStoreError.noProfile
            }
            if let active = try Self.activeMatch(of: userID, db) { return .alreadyMatched(active) }
            if let penalty = SlpRules.penalty(
                dodgeCount: profile.dodgeCount, lastDodge: profile.lastDodgeAtMilliseconds, now: now)
            {
                return .penalty(tier: penalty.tier, endsAtMilliseconds: penalty.endsAt)
            }
            try db.execute(
                sql: """
                    INSERT INTO slp_queue (user_id, latitude, longitude, studies, entered_at_ms) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (user_id) DO UPDATE SET latitude = excluded.latitude, longitude = excluded.longitude,
                        studies = excluded.studies, entered_at_ms = excluded.entered_at_ms
                    """,
                arguments: [userID, point.latitude, point.longitude, studies.joined(separator: "\n"), now])
            guard let id = try Self.queueID(of: userID, db) else { throw SlpStoreError.notQueued }
            try SlpSchema.positions.set(id, at: point, in: db)
            return .entered
        }
    }

    func leaveQueue(userID: String) async throws -> SlpActiveMatch? {
        try await database.write { db in
            guard try Self.hasProfile(userID, db) else { throw SlpStoreError.noProfile }
            if let active = try Self.activeMatch(of: userID, db) { return active }
            try Self.dequeue([userID], db)
            return nil
        }
    }

    func nearby(
        userID: String, around centre: GeoPoint, radius: Double, limit: Int, now: Int64
    ) async throws -> SlpNearbyRecord {
        try await database.read { db in
            guard let me = try Self.profile(userID, db, withComments: false) else { throw SlpStoreError.noProfile }
            let mine = (SlpRules.age(me.birthDate, now: now), me.partnerMinAge, me.partnerMaxAge)
            // One query for the candidates with their cards (the R*Tree joined with queue, profile and
            // user), one for the requesters, one for all their comments.
            let hits = try SlpSchema.positions.within(
                radius, of: centre, limit: limit, columns: Self.personColumns,
                joins: "JOIN slp_queue q ON q.id = nearby.id " + Self.personJoins, in: db
            ) { _, row in
                // The index's three columns come first (NearbyIndex.within), then the card's.
                let other: String = row[3 + Card.userID]
                guard other != userID else { return false }
                let birth = DateParts(
                    year: row[3 + Card.birthYear], month: row[3 + Card.birthMonth], day: row[3 + Card.birthDay])
                let theirs = (
                    SlpRules.age(birth, now: now), row[3 + Card.partnerMinAge] as Int,
                    row[3 + Card.partnerMaxAge] as Int
                )
                return SlpRules.agesFit(mine, theirs)
            }
            let requesterRows = try Row.fetchAll(
                db,
                sql: Self.personSQL + " JOIN slp_request r ON r.from_id = q.user_id WHERE r.to_id = ?"
                    + " ORDER BY r.created_at_ms, r.from_id",
                arguments: [userID])
            let comments = try Self.comments(
                of: hits.map { $0.row[3 + Card.userID] as String } + requesterRows.map { $0[Card.userID] as String },
                limit: SlpRules.commentsShown, db)
            let people = hits.map { Self.person($0.row, at: 3, metres: $0.hit.metres, comments: comments) }
            let requesters = requesterRows.map { row in
                let point = GeoPoint(latitude: row["latitude"], longitude: row["longitude"])
                return Self.person(row, metres: point.map { centre.distance(to: $0) } ?? 0, comments: comments)
            }
            return SlpNearbyRecord(people: people, requesters: requesters)
        }
    }

    func pruneQueue(enteredBefore: Int64) async throws -> Int {
        try await database.write { db in
            let stale = try String.fetchAll(
                db, sql: "SELECT user_id FROM slp_queue WHERE entered_at_ms < ?", arguments: [enteredBefore])
            try Self.dequeue(stale, db)
            // Used sign-up tickets are remembered only while they would have worked.
            try db.execute(sql: "DELETE FROM slp_used_ticket WHERE expires_at_ms < ?", arguments: [enteredBefore])
            return stale.count
        }
    }

    // MARK: Rows

    /// A new profile (kept as it was when the member has one: `changesCount` says which).
    static func insert(_ profile: SlpProfileRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO slp_profile (user_id, gender, birth_year, birth_month, birth_day, email,
                    favourite_study, searchable, partner_min_age, partner_max_age, avatar, background,
                    owned_avatars, owned_backgrounds, reputation, created_at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                profile.userID, profile.gender, profile.birthDate.year, profile.birthDate.month,
                profile.birthDate.day, profile.email, profile.favouriteStudy, profile.searchable,
                profile.partnerMinAge, profile.partnerMaxAge, profile.avatar, profile.background,
                SlpRules.encode(profile.ownedAvatars), SlpRules.encode(profile.ownedBackgrounds),
                SlpRules.encode(profile.reputation), profile.createdAtMilliseconds,
            ])
    }

    static func hasProfile(_ userID: String, _ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM slp_profile WHERE user_id = ?", arguments: [userID]) == true
    }

    static func queueID(of userID: String, _ db: Database) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT id FROM slp_queue WHERE user_id = ?", arguments: [userID])
    }

    static func activeMatch(of userID: String, _ db: Database) throws -> SlpActiveMatch? {
        try Row.fetchOne(
            db, sql: "SELECT match_id, partner_id FROM slp_match_member WHERE user_id = ? AND active = 1",
            arguments: [userID]
        ).map { SlpActiveMatch(matchID: $0["match_id"], partnerID: $0["partner_id"]) }
    }

    /// Takes members out of the queue (their positions go by trigger) with every request to or from them.
    static func dequeue(_ userIDs: [String], _ db: Database) throws {
        for userID in userIDs {
            try db.execute(sql: "DELETE FROM slp_queue WHERE user_id = ?", arguments: [userID])
            try db.execute(
                sql: "DELETE FROM slp_request WHERE from_id = ? OR to_id = ?", arguments: [userID, userID])
        }
    }

    static func comments(of userID: String, limit: Int, _ db: Database) throws -> [String] {
        try String.fetchAll(
            db,
            sql: """
                SELECT comment FROM slp_rating WHERE ratee_id = ? AND comment != ''
                ORDER BY created_at_ms DESC, rowid DESC LIMIT ?
                """,
            arguments: [userID, limit])
    }

    static func profile(_ userID: String, _ db: Database, withComments: Bool = true) throws -> SlpProfileRecord? {
        guard
            let row = try Row.fetchOne(
                db,
                sql: "SELECT p.*, u.nickname FROM slp_profile p JOIN user u ON u.id = p.user_id WHERE p.user_id = ?",
                arguments: [userID])
        else { return nil }
        return SlpProfileRecord(
            userID: row["user_id"], nickname: row["nickname"] ?? "", gender: row["gender"],
            birthDate: DateParts(year: row["birth_year"], month: row["birth_month"], day: row["birth_day"]),
            email: row["email"], favouriteStudy: row["favourite_study"], searchable: row["searchable"],
            partnerMinAge: row["partner_min_age"], partnerMaxAge: row["partner_max_age"], avatar: row["avatar"],
            background: row["background"], ownedAvatars: SlpRules.decode(row["owned_avatars"]),
            ownedBackgrounds: SlpRules.decode(row["owned_backgrounds"]), reputation: SlpRules.decode(row["reputation"]),
            comments: withComments ? try comments(of: userID, limit: 100, db) : [], dodgeCount: row["dodge_count"],
            lastDodgeAtMilliseconds: row["last_dodge_at_ms"], createdAtMilliseconds: row["created_at_ms"])
    }

    /// A queued member's card: queue row, profile and nickname (`WHERE` added by the caller).
    static let personSQL = "SELECT \(personColumns) FROM slp_queue q \(personJoins)"
    static let personColumns = """
        q.id, q.user_id, q.latitude, q.longitude, q.studies, p.reputation, p.gender, p.avatar, p.background,
            p.birth_year, p.birth_month, p.birth_day, p.partner_min_age, p.partner_max_age, u.nickname
        """
    static let personJoins = "JOIN slp_profile p ON p.user_id = q.user_id JOIN user u ON u.id = q.user_id"

    /// The newest `limit` comments received by each of `userIDs`, in one query.
    static func comments(of userIDs: [String], limit: Int, _ db: Database) throws -> [String: [String]] {
        guard !userIDs.isEmpty else { return [:] }
        var comments: [String: [String]] = [:]
        let rows = try Row.fetchCursor(
            db,
            sql: """
                SELECT ratee_id, comment FROM slp_rating
                WHERE ratee_id IN (\(ServiceDatabase.placeholders(userIDs.count))) AND comment != ''
                ORDER BY created_at_ms DESC, rowid DESC
                """,
            arguments: StatementArguments(userIDs))
        while let row = try rows.next() {
            let ratee: String = row["ratee_id"]
            if comments[ratee, default: []].count < limit { comments[ratee, default: []].append(row["comment"]) }
        }
        return comments
    }

    /// A card from a row whose `personColumns` start at `at` (read by position: a search reads some
    /// 50 cards of 15 columns, and a lookup by name costs more than the value).
    static func person(_ row: Row, at first: Int = 0, metres: Double, comments: [String: [String]]) -> SlpPersonRecord {
        let studies: String = row[first + Card.studies]
        let userID: String = row[first + Card.userID]
        return SlpPersonRecord(
            userID: userID, nickname: row[first + Card.nickname] ?? "", latitude: row[first + Card.latitude],
            longitude: row[first + Card.longitude], metres: metres,
            studies: studies.isEmpty ? [] : studies.split(separator: "\n").map(String.init),
            reputation: SlpRules.decode(row[first + Card.reputation]), comments: comments[userID] ?? [],
            gender: row[first + Card.gender], avatar: row[first + Card.avatar],
            background: row[first + Card.background])
    }

    /// The positions of `personColumns`.
    enum Card {
        static let userID = 1, latitude = 2, longitude = 3, studies = 4, reputation = 5, gender = 6, avatar = 7
        static let background = 8, birthYear = 9, birthMonth = 10, birthDay = 11, partnerMinAge = 12
        static let partnerMaxAge = 13, nickname = 14
    }
}
