import Foundation
import GRDB
import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// `AccountStore` on the service's SQLite database (GRDB).
struct SQLiteAccountStore: AccountStore {
    let database: ServiceDatabase
    /// What the other services are told, in the transaction of each change.
    let events: AccountEvents
    /// Deleted users' tokens stop working here in the deleting transaction (and elsewhere through
    /// `events.accountDeleted`).
    let revokedUsers: RevokedUsers

    // MARK: Users and designers

    func createUser(_ user: UserRecord, designer: DesignerRecord?, session: SessionRecord) async throws {
        do {
            try await database.write { db in try insertAccount(user, designer: designer, session: session, db) }
        } catch let error as DatabaseError where Self.isEmailTaken(error) {
            throw AccountStoreError.emailTaken
        } catch let error as DatabaseError where Self.isNicknameTaken(error) {
            throw AccountStoreError.nicknameTaken
        }
    }

    /// A new account's rows: the user, their designer profile (and its search index) and first session,
    /// and what the other services hear of it (`AccountEvents.accountCreated`), in one transaction.
    func insertAccount(_ user: UserRecord, designer: DesignerRecord?, session: SessionRecord, _ db: Database) throws {
        try Self.insert(user, db)
        if let designer {
            try Self.insert(designer, db)
            try Self.index(designerID: user.id, db)
        }
        try Self.insert(session, db)
        try events.accountCreated(user, designer: designer, in: db)
    }

    static func isEmailTaken(_ error: DatabaseError) -> Bool {
        error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE && error.message?.contains("user.email") == true
    }

    static func isNicknameTaken(_ error: DatabaseError) -> Bool {
        error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE && error.message?.contains("user.nickname") == true
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

    func user(app: AppID, email: String) async throws -> UserRecord? {
        try await database.read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM user WHERE app = ? AND email = ?", arguments: [app.rawValue, email]
            ).map(Self.user)
        }
    }

    func users(ids: [String]) async throws -> [UserRecord] {
        guard !ids.isEmpty else { return [] }
        return try await database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM user WHERE id IN (\(ServiceDatabase.placeholders(ids.count)))",
                arguments: StatementArguments(ids)
            ).map(Self.user)
        }
    }

    func shopCards(designerIDs ids: [String]) async throws -> [String: ShopCardRecord] {
        guard !ids.isEmpty else { return [:] }
        return try await database.read { db in
            var cards: [String: ShopCardRecord] = [:]
            for row in try Row.fetchAll(
                db,
                sql:
                    "SELECT user_id, shop_name, city, district FROM designer WHERE user_id IN (\(ServiceDatabase.placeholders(ids.count)))",
                arguments: StatementArguments(ids))
            {
                cards[row["user_id"]] = ShopCardRecord(
                    name: row["shop_name"], city: row["city"], district: row["district"])
            }
            return cards
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
        let events = self.events
        try await database.write { db in
            let before = try Row.fetchOne(
                db, sql: "SELECT name, profile_image_id FROM user WHERE id = ?", arguments: [user.id])
            try db.execute(
                sql: """
                    UPDATE user SET name = ?, phone = ?, gender = ?, birth_year = ?, birth_month = ?, birth_day = ?,
                        profile_image_id = ?, favourite_style = ?, password_hash = ? WHERE id = ?
                    """,
                arguments: [
                    user.name, user.phone, user.gender, user.birthDate?.year, user.birthDate?.month,
                    user.birthDate?.day, user.profileImageID, user.favouriteStyle, user.passwordHash, user.id,
                ])
            guard db.changesCount == 1, let before else { throw AccountStoreError.notFound }
            try Self.index(designerID: user.id, db)
            // The cached copies elsewhere (post authors, room members) are dropped once this commits.
            if before["name"] as String != user.name || before["profile_image_id"] as String != user.profileImageID {
                try events.publicFieldsChanged(userID: user.id, in: db)
            }
        }
    }

    func updateDesigner(_ designer: DesignerRecord) async throws {
        try await database.write { db in
            let shop = designer.shop
            let card = try Row.fetchOne(
                db, sql: "SELECT shop_name, city, district FROM designer WHERE user_id = ?",
                arguments: [designer.userID])
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
            if let card,
                card["shop_name"] as String? != shop.name || card["city"] as String? != shop.city
                    || card["district"] as String? != shop.district
            {
                try events.publicFieldsChanged(userID: designer.userID, in: db)
            }
        }
    }
}

// MARK: Rows

extension SQLiteAccountStore {
    static func insert(_ user: UserRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO user (id, role, app, email, name, phone, gender, birth_year, birth_month, birth_day,
                    profile_image_id, favourite_style, password_hash, created_at_ms, nickname)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                user.id, user.role.rawValue, user.app.rawValue, user.email.isEmpty ? nil : user.email, user.name,
                user.phone, user.gender, user.birthDate?.year, user.birthDate?.month, user.birthDate?.day,
                user.profileImageID, user.favouriteStyle, user.passwordHash, user.createdAtMilliseconds,
                user.nickname,
            ])
    }

    static func insert(_ designer: DesignerRecord, _ db: Database) throws {
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

    static func insert(_ session: SessionRecord, _ db: Database) throws {
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
    static func index(designerID: String, _ db: Database, replacing: Bool = true) throws {
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

    static func followerCount(_ designerID: String, _ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT follower_count FROM designer WHERE user_id = ?", arguments: [designerID])
            ?? 0
    }

    static func recentSearches(_ userID: String, _ db: Database) throws -> [RecentSearchRecord] {
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

    static func user(_ row: Row) throws -> UserRecord {
        let year: Int? = row["birth_year"]
        let month: Int? = row["birth_month"]
        let day: Int? = row["birth_day"]
        return UserRecord(
            id: row["id"], role: UserRole(rawValue: row["role"]), app: AppID(rawValue: row["app"]),
            email: row["email"] ?? "",
            name: row["name"], phone: row["phone"], gender: row["gender"],
            birthDate: year.flatMap { year in
                month.flatMap { month in day.map { DateParts(year: year, month: month, day: $0) } }
            },
            profileImageID: row["profile_image_id"], favouriteStyle: row["favourite_style"],
            passwordHash: row["password_hash"], createdAtMilliseconds: row["created_at_ms"], nickname: row["nickname"],
            suspendedUntilMilliseconds: row["suspended_until_ms"])
    }

    static func designer(_ row: Row) throws -> DesignerRecord {
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

    static func summary(_ row: Row) throws -> DesignerSummaryRecord {
        DesignerSummaryRecord(
            user: try user(row), rank: row["rank"], shopName: row["shop_name"], district: row["district"],
            followerCount: row["follower_count"])
    }

    static func json<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }
}
