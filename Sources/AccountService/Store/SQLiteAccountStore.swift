import Foundation
import GRDB
import RPCCore
import ServiceRuntime
import YediProto

/// `AccountStore` on the service's SQLite database (GRDB).
struct SQLiteAccountStore: AccountStore {
    let database: ServiceDatabase
    let outbox: Outbox
    /// Deleted users' tokens stop working here in the deleting transaction, and everywhere else through
    /// `RevokeUser` jobs, each delivered before that peer's `PurgeUser`.
    let revokedUsers: RevokedUsers
    /// The services that hold user data and get `PurgeUser` when an account is deleted.
    static let purgedPeers:
        [(peer: String, method: RPCMethod<YediCommon.PurgeUserRequest, YediCommon.PurgeUserResponse>)] = [
            ("content", YediContent.ContentService.Method.purgeUser),
            ("booking", YediBooking.BookingService.Method.purgeUser),
            ("chat", YediChat.ChatService.Method.purgeUser),
        ]

    // MARK: Users and designers

    func createUser(_ user: UserRecord, designer: DesignerRecord?, session: SessionRecord) async throws {
        do {
            try await database.write { db in
                try Self.insert(user, db)
                if let designer {
                    try Self.insert(designer, db)
                    try Self.index(designerID: user.id, db)
                }
                try Self.insert(session, db)
            }
        } catch let error as DatabaseError
            where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE && error.message?.contains("user.email") == true
        {
            throw AccountStoreError.emailTaken
        }
    }

    /// Adds many users in one transaction (seeding a test or bench database; imports), without sessions.
    func bulkInsert(_ users: [(UserRecord, DesignerRecord?)]) async throws {
        try await database.write { db in
            for (user, designer) in users {
                try Self.insert(user, db)
                if let designer {
                    try Self.insert(designer, db)
                    try Self.index(designerID: user.id, db, replacing: false)
                }
            }
        }
    }

    func user(id: String) async throws -> UserRecord? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM user WHERE id = ?", arguments: [id]).map(Self.user)
        }
    }

    func user(email: String) async throws -> UserRecord? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM user WHERE email = ?", arguments: [email]).map(Self.user)
        }
    }

    func users(ids: [String]) async throws -> [UserRecord] {
        guard !ids.isEmpty else { return [] }
        return try await database.read { db in
            let marks = Array(repeating: "?", count: ids.count).joined(separator: ",")
            return try Row.fetchAll(
                db, sql: "SELECT * FROM user WHERE id IN (\(marks))", arguments: StatementArguments(ids)
            ).map(Self.user)
        }
    }

    func designer(id: String) async throws -> (UserRecord, DesignerRecord)? {
        try await database.read { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT user.*, designer.* FROM designer JOIN user ON user.id = designer.user_id
                        WHERE designer.user_id = ?
                        """,
                    arguments: [id])
            else { return nil }
            return (try Self.user(row), try Self.designer(row))
        }
    }

    func updateUser(_ user: UserRecord) async throws {
        try await database.write { db in
            try db.execute(
                sql: """
                    UPDATE user SET name = ?, phone = ?, gender = ?, birth_year = ?, birth_month = ?, birth_day = ?,
                        profile_image_id = ?, favourite_style = ?, password_hash = ? WHERE id = ?
                    """,
                arguments: [
                    user.name, user.phone, user.gender, user.birthDate?.year, user.birthDate?.month,
                    user.birthDate?.day, user.profileImageID, user.favouriteStyle, user.passwordHash, user.id,
                ])
            guard db.changesCount == 1 else { throw AccountStoreError.notFound }
            try Self.index(designerID: user.id, db)
        }
    }

    func updateDesigner(_ designer: DesignerRecord) async throws {
        try await database.write { db in
            let shop = designer.shop
            try db.execute(
                sql: """
                    UPDATE designer SET description = ?, skills = ?, rank = ?, shop_name = ?, shop_phone = ?, city = ?,
                        district = ?, detail = ?, latitude = ?, longitude = ?, opening_hour = ?, closing_hour = ?,
                        messenger_links = ?, time_zone = ?
                    WHERE user_id = ?
                    """,
                arguments: [
                    designer.description, try Self.json(designer.skills), designer.rank, shop.name, shop.phone,
                    shop.city, shop.district, shop.detail, shop.latitude, shop.longitude, shop.openingHour,
                    shop.closingHour, try Self.json(shop.messengerLinks), shop.timeZone, designer.userID,
                ])
            guard db.changesCount == 1 else { throw AccountStoreError.notFound }
            try Self.index(designerID: designer.userID, db)
        }
    }

    // MARK: Sessions

    func createSession(_ session: SessionRecord) async throws {
        try await database.write { db in try Self.insert(session, db) }
    }

    func rotateSession(refreshHash: [UInt8], next: SessionRecord, now: Int64) async throws -> SessionRotation {
        try await database.write { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql:
                        "SELECT id, family_id, user_id, expires_at_ms, used_at_ms, revoked_at_ms FROM session WHERE refresh_hash = ?",
                    arguments: [Data(refreshHash)])
            else { return .unknown }
            let familyID: String = row["family_id"]
            if (row["revoked_at_ms"] as Int64?) != nil { return .unknown }
            if (row["used_at_ms"] as Int64?) != nil {
                // Shown twice: someone else has it. End every session of the family.
                try db.execute(
                    sql: "UPDATE session SET revoked_at_ms = ? WHERE family_id = ? AND revoked_at_ms IS NULL",
                    arguments: [now, familyID])
                return .reused
            }
            if (row["expires_at_ms"] as Int64) <= now { return .expired }
            try db.execute(
                sql: "UPDATE session SET used_at_ms = ? WHERE id = ?", arguments: [now, row["id"] as String])
            var next = next
            next.familyID = familyID
            next.userID = row["user_id"]
            try Self.insert(next, db)
            return .rotated(userID: next.userID, familyID: familyID)
        }
    }

    func pruneSessions(deadBefore: Int64) async throws -> Int {
        try await database.write { db in
            try db.execute(
                sql: "DELETE FROM session WHERE expires_at_ms < ? OR revoked_at_ms < ?",
                arguments: [deadBefore, deadBefore])
            return db.changesCount
        }
    }

    func revokeFamily(refreshHash: [UInt8], now: Int64) async throws -> Bool {
        try await database.write { db in
            guard
                let familyID = try String.fetchOne(
                    db, sql: "SELECT family_id FROM session WHERE refresh_hash = ?", arguments: [Data(refreshHash)])
            else { return false }
            try db.execute(
                sql: "UPDATE session SET revoked_at_ms = ? WHERE family_id = ? AND revoked_at_ms IS NULL",
                arguments: [now, familyID])
            return true
        }
    }

    // MARK: Password attempts (the sign-in throttle)

    func beginPasswordAttempt(
        account: String, address: String, now: Int64, throttle: SignInThrottle
    ) async throws -> ThrottleDecision {
        try await database.write { db in
            // Forget a few records that no longer change an answer, so guesses at many emails do not
            // grow the table without bound.
            try db.execute(
                sql: """
                    DELETE FROM password_attempt WHERE (account, address) IN (
                        SELECT account, address FROM password_attempt
                        WHERE known = 0 AND window_started_at_ms < ? AND locked_until_ms <= ? LIMIT 8)
                    """,
                arguments: [now - throttle.windowMilliseconds, now])
            var state = try Self.attempts(db, account: account, address: address)
            let before = state
            let decision = throttle.begin(&state, now: now)
            if state != before { try Self.save(db, state, account: account, address: address) }
            return decision
        }
    }

    func endPasswordAttempt(
        account: String, address: String, outcome: PasswordAttemptOutcome, throttle: SignInThrottle
    ) async throws {
        try await database.write { db in
            var state = try Self.attempts(db, account: account, address: address)
            throttle.end(&state, outcome)
            try Self.save(db, state, account: account, address: address)
        }
    }

    func passwordAttempts(account: String, address: String) async throws -> ThrottleState {
        try await database.read { db in try Self.attempts(db, account: account, address: address) }
    }

    /// The account's backstop row has the address ''.
    private static func attempts(_ db: Database, account: String, address: String) throws -> ThrottleState {
        func record(_ address: String) throws -> ThrottleRecord? {
            try Row.fetchOne(
                db, sql: "SELECT * FROM password_attempt WHERE account = ? AND address = ?",
                arguments: [account, address]
            ).map { row in
                ThrottleRecord(
                    failures: row["failures"], windowStartedAtMilliseconds: row["window_started_at_ms"],
                    lockedUntilMilliseconds: row["locked_until_ms"], known: row["known"])
            }
        }
        return ThrottleState(pair: try record(address), account: try record(""))
    }

    private static func save(_ db: Database, _ state: ThrottleState, account: String, address: String) throws {
        for (key, record) in [(address, state.pair), ("", state.account)] {
            guard let record else { continue }
            try db.execute(
                sql: """
                    INSERT INTO password_attempt (account, address, failures, window_started_at_ms, locked_until_ms, known)
                    VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (account, address) DO UPDATE SET failures = excluded.failures,
                        window_started_at_ms = excluded.window_started_at_ms, locked_until_ms = excluded.locked_until_ms,
                        known = excluded.known
                    """,
                arguments: [
                    account, key, record.failures, record.windowStartedAtMilliseconds, record.lockedUntilMilliseconds,
                    record.known,
                ])
        }
    }

    // MARK: Follows

    func follow(customerID: String, designerID: String, now: Int64) async throws -> Int64 {
        try await database.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM designer WHERE user_id = ?", arguments: [designerID]) != nil
            else { throw AccountStoreError.notFound }
            try db.execute(
                sql: "INSERT OR IGNORE INTO follow (customer_id, designer_id, followed_at_ms) VALUES (?, ?, ?)",
                arguments: [customerID, designerID, now])
            if db.changesCount == 1 {
                try db.execute(
                    sql: "UPDATE designer SET follower_count = follower_count + 1 WHERE user_id = ?",
                    arguments: [designerID])
            }
            return try Self.followerCount(designerID, db)
        }
    }

    func unfollow(customerID: String, designerID: String) async throws -> Int64 {
        try await database.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM designer WHERE user_id = ?", arguments: [designerID]) != nil
            else { throw AccountStoreError.notFound }
            try db.execute(
                sql: "DELETE FROM follow WHERE customer_id = ? AND designer_id = ?",
                arguments: [customerID, designerID])
            if db.changesCount == 1 {
                try db.execute(
                    sql: "UPDATE designer SET follower_count = follower_count - 1 WHERE user_id = ?",
                    arguments: [designerID])
            }
            return try Self.followerCount(designerID, db)
        }
    }

    func following(customerID: String, after position: ListPosition?, limit: Int) async throws -> [(
        DesignerSummaryRecord, ListPosition
    )] {
        try await database.read { db in
            let after = position.flatMap { Int64($0.key) }
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT user.*, designer.rank, designer.shop_name, designer.district, designer.follower_count,
                        follow.followed_at_ms
                    FROM follow JOIN designer ON designer.user_id = follow.designer_id
                        JOIN user ON user.id = follow.designer_id
                    WHERE follow.customer_id = ?
                        AND (? IS NULL OR (follow.followed_at_ms, follow.designer_id) < (?, ?))
                    ORDER BY follow.followed_at_ms DESC, follow.designer_id DESC
                    LIMIT ?
                    """,
                arguments: [customerID, after, after, position?.id, limit])
            return try rows.map { row in
                (try Self.summary(row), ListPosition(key: String(row["followed_at_ms"] as Int64), id: row["id"]))
            }
        }
    }

    func followedDesignerIDs(userID: String) async throws -> [String] {
        try await database.read { db in
            try String.fetchAll(
                db, sql: "SELECT designer_id FROM follow WHERE customer_id = ? ORDER BY followed_at_ms DESC",
                arguments: [userID])
        }
    }

    // MARK: Search

    func searchDesigners(query: String, after position: ListPosition?, limit: Int) async throws -> [(
        DesignerSummaryRecord, ListPosition
    )] {
        try await database.read { db in
            let needle = query.lowercased()
            // Trigrams need three characters; shorter queries scan the (small) designer table instead.
            let candidates =
                needle.count >= 3
                ? "SELECT designer.user_id FROM designer_search JOIN designer ON designer.rowid = designer_search.rowid WHERE designer_search MATCH :phrase"
                : """
                SELECT designer.user_id FROM designer JOIN user ON user.id = designer.user_id
                WHERE instr(lower(user.name), :needle) > 0 OR instr(lower(designer.shop_name), :needle) > 0
                    OR instr(lower(designer.district), :needle) > 0
                """
            var bucketAfter: Int?
            var nameAfter: String?
            if let position, let separator = position.key.firstIndex(of: "|"),
                let bucket = Int(position.key[..<separator])
            {
                bucketAfter = bucket
                nameAfter = String(position.key[position.key.index(after: separator)...])
            }
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM (
                        SELECT user.*, designer.rank, designer.shop_name, designer.district, designer.follower_count,
                            CASE WHEN lower(user.name) = :needle THEN 0
                                 WHEN substr(lower(user.name), 1, length(:needle)) = :needle THEN 1
                                 WHEN instr(lower(user.name), :needle) > 0 THEN 2
                                 ELSE 3 END AS bucket
                        FROM designer JOIN user ON user.id = designer.user_id
                        WHERE designer.user_id IN (\(candidates))
                    )
                    WHERE :bucket IS NULL OR (bucket, name, id) > (:bucket, :name, :id)
                    ORDER BY bucket, name, id
                    LIMIT :limit
                    """,
                arguments: [
                    "needle": needle, "phrase": "\"" + needle.replacingOccurrences(of: "\"", with: "\"\"") + "\"",
                    "bucket": bucketAfter, "name": nameAfter, "id": position?.id, "limit": limit,
                ])
            return try rows.map { row in
                let bucket: Int = row["bucket"]
                let name: String = row["name"]
                return (try Self.summary(row), ListPosition(key: "\(bucket)|\(name)", id: row["id"]))
            }
        }
    }

    // MARK: Recent searches

    func recordRecentSearch(
        userID: String, kind: RecentSearchKind, value: String, id: String, now: Int64, keep: Int
    ) async throws -> [RecentSearchRecord] {
        try await database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO recent_search (id, user_id, kind, value, searched_at_ms) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (user_id, kind, value) DO UPDATE SET searched_at_ms = excluded.searched_at_ms
                    """,
                arguments: [id, userID, kind.rawValue, value, now])
            try db.execute(
                sql: """
                    DELETE FROM recent_search WHERE user_id = ? AND id NOT IN (
                        SELECT id FROM recent_search WHERE user_id = ? ORDER BY searched_at_ms DESC, rowid DESC LIMIT ?)
                    """,
                arguments: [userID, userID, keep])
            return try Self.recentSearches(userID, db)
        }
    }

    func recentSearches(userID: String) async throws -> [RecentSearchRecord] {
        try await database.read { db in try Self.recentSearches(userID, db) }
    }

    func deleteRecentSearches(userID: String, id: String?) async throws -> [RecentSearchRecord] {
        try await database.write { db in
            if let id {
                try db.execute(sql: "DELETE FROM recent_search WHERE user_id = ? AND id = ?", arguments: [userID, id])
            } else {
                try db.execute(sql: "DELETE FROM recent_search WHERE user_id = ?", arguments: [userID])
            }
            return try Self.recentSearches(userID, db)
        }
    }

    // MARK: Deletion

    func deleteAccount(userID: String, now: Int64) async throws -> Bool {
        let outbox = self.outbox
        let revokedUsers = self.revokedUsers
        return try await database.write { db in
            guard let email = try String.fetchOne(db, sql: "SELECT email FROM user WHERE id = ?", arguments: [userID])
            else { return false }
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
            try db.execute(sql: "DELETE FROM password_attempt WHERE account = ?", arguments: [email])
            // Sessions, the designer row and the user's own recent searches go with the user (ON DELETE CASCADE).
            try db.execute(sql: "DELETE FROM user WHERE id = ?", arguments: [userID])
            let revocation = YediRuntime.RevokeUserRequest(
                userID: userID, revokedAtMs: now, keepUntilMs: now + RevokedUsers.retention.wholeMilliseconds)
            try revokedUsers.revoke(
                userID: userID, revokedAt: revocation.revokedAtMs, keepUntil: revocation.keepUntilMs, in: db)
            // Per peer, jobs are delivered in order: the revocation (which waits for the user's running
            // calls there) before the purge.
            for (peer, method) in Self.purgedPeers {
                try outbox.enqueue(
                    in: db, peer: peer, method: YediRuntime.Revocations.Method.revokeUser, request: revocation)
                try outbox.enqueue(in: db, peer: peer, method: method, request: .init(userID: userID))
            }
            return true
        }
    }
}

// MARK: Rows

extension SQLiteAccountStore {
    fileprivate static func insert(_ user: UserRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO user (id, role, app, email, name, phone, gender, birth_year, birth_month, birth_day,
                    profile_image_id, favourite_style, password_hash, created_at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                user.id, user.role.rawValue, user.app, user.email, user.name, user.phone, user.gender,
                user.birthDate?.year, user.birthDate?.month, user.birthDate?.day, user.profileImageID,
                user.favouriteStyle, user.passwordHash, user.createdAtMilliseconds,
            ])
    }

    fileprivate static func insert(_ designer: DesignerRecord, _ db: Database) throws {
        let shop = designer.shop
        try db.execute(
            sql: """
                INSERT INTO designer (user_id, description, skills, rank, follower_count, shop_name, shop_phone, city,
                    district, detail, latitude, longitude, opening_hour, closing_hour, messenger_links, time_zone)
                VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                designer.userID, designer.description, try json(designer.skills), designer.rank, shop.name,
                shop.phone, shop.city, shop.district, shop.detail, shop.latitude, shop.longitude, shop.openingHour,
                shop.closingHour, try json(shop.messengerLinks), shop.timeZone,
            ])
    }

    fileprivate static func insert(_ session: SessionRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO session (id, family_id, user_id, refresh_hash, created_at_ms, expires_at_ms)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                session.id, session.familyID, session.userID, Data(session.refreshHash),
                session.createdAtMilliseconds, session.expiresAtMilliseconds,
            ])
    }

    /// Keeps the search index row of a designer in step with their name, shop name and district.
    fileprivate static func index(designerID: String, _ db: Database, replacing: Bool = true) throws {
        guard
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT designer.rowid AS rowid, user.name, designer.shop_name, designer.district
                    FROM designer JOIN user ON user.id = designer.user_id WHERE designer.user_id = ?
                    """,
                arguments: [designerID])
        else { return }
        let rowid: Int64 = row["rowid"]
        if replacing {
            try db.execute(sql: "DELETE FROM designer_search WHERE rowid = ?", arguments: [rowid])
        }
        try db.execute(
            sql: "INSERT INTO designer_search (rowid, designer_id, name, shop_name, district) VALUES (?, ?, ?, ?, ?)",
            arguments: [
                rowid, designerID, row["name"] as String, row["shop_name"] as String, row["district"] as String,
            ])
    }

    fileprivate static func followerCount(_ designerID: String, _ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT follower_count FROM designer WHERE user_id = ?", arguments: [designerID])
            ?? 0
    }

    fileprivate static func recentSearches(_ userID: String, _ db: Database) throws -> [RecentSearchRecord] {
        try Row.fetchAll(
            db,
            sql: "SELECT * FROM recent_search WHERE user_id = ? ORDER BY searched_at_ms DESC, rowid DESC",
            arguments: [userID]
        ).map { row in
            RecentSearchRecord(
                id: row["id"], kind: RecentSearchKind(rawValue: row["kind"]) ?? .query, value: row["value"],
                searchedAtMilliseconds: row["searched_at_ms"])
        }
    }

    fileprivate static func user(_ row: Row) throws -> UserRecord {
        let year: Int? = row["birth_year"]
        let month: Int? = row["birth_month"]
        let day: Int? = row["birth_day"]
        return UserRecord(
            id: row["id"], role: UserRole(rawValue: row["role"]), app: row["app"], email: row["email"],
            name: row["name"], phone: row["phone"], gender: row["gender"],
            birthDate: year.flatMap { year in
                month.flatMap { month in day.map { DateParts(year: year, month: month, day: $0) } }
            },
            profileImageID: row["profile_image_id"], favouriteStyle: row["favourite_style"],
            passwordHash: row["password_hash"], createdAtMilliseconds: row["created_at_ms"])
    }

    fileprivate static func designer(_ row: Row) throws -> DesignerRecord {
        DesignerRecord(
            userID: row["user_id"], description: row["description"],
            skills: try decode([String].self, row["skills"]), rank: row["rank"], followerCount: row["follower_count"],
            shop: ShopRecord(
                name: row["shop_name"], phone: row["shop_phone"], city: row["city"], district: row["district"],
                detail: row["detail"], latitude: row["latitude"], longitude: row["longitude"],
                openingHour: row["opening_hour"], closingHour: row["closing_hour"],
                messengerLinks: try decode([MessengerLinkRecord].self, row["messenger_links"]),
                timeZone: row["time_zone"]))
    }

    fileprivate static func summary(_ row: Row) throws -> DesignerSummaryRecord {
        DesignerSummaryRecord(
            user: try user(row), rank: row["rank"], shopName: row["shop_name"], district: row["district"],
            followerCount: row["follower_count"])
    }

    fileprivate static func json<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }

    fileprivate static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }
}
