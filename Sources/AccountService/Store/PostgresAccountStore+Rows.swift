import Foundation
import PostgresNIO
import RPCAccess
import RPCCore
import ServiceRuntime

/// The rows the PostgreSQL store writes and reads back as records.
extension PostgresAccountStore {
    static func insert(_ user: UserRecord, _ tx: PostgresTransaction) async throws {
        let email: String? = user.email.isEmpty ? nil : user.email
        try await tx.query(
            """
            INSERT INTO app_user (id, role, app, email, name, phone, gender, birth_year, birth_month, birth_day,
                profile_image_id, favourite_style, password_hash, created_at_ms, nickname)
            VALUES (\(user.id), \(user.role.rawValue), \(user.app.rawValue), \(email), \(user.name), \(user.phone),
                \(user.gender), \(user.birthDate?.year), \(user.birthDate?.month), \(user.birthDate?.day),
                \(user.profileImageID), \(user.favouriteStyle), \(user.passwordHash), \(user.createdAtMilliseconds),
                \(user.nickname))
            """)
    }

    static func insert(_ designer: DesignerRecord, _ tx: PostgresTransaction) async throws {
        let shop = designer.shop
        let skills = try json(designer.skills)
        let links = try json(shop.messengerLinks)
        try await tx.query(
            """
            INSERT INTO designer (user_id, description, skills, rank, follower_count, shop_name, shop_phone, city,
                district, detail, latitude, longitude, opening_hour, closing_hour, messenger_links, time_zone)
            VALUES (\(designer.userID), \(designer.description), \(skills), \(designer.rank), 0, \(shop.name),
                \(shop.phone), \(shop.city), \(shop.district), \(shop.detail), \(shop.latitude), \(shop.longitude),
                \(shop.openingHour), \(shop.closingHour), \(links), \(shop.timeZone))
            """)
    }

    static func insert(_ session: SessionRecord, _ tx: PostgresTransaction) async throws {
        try await tx.query(
            """
            INSERT INTO session (id, family_id, user_id, refresh_hash, created_at_ms, expires_at_ms)
            VALUES (\(session.id), \(session.familyID), \(session.userID), \(bytea(session.refreshHash)),
                \(session.createdAtMilliseconds), \(session.expiresAtMilliseconds))
            """)
    }

    /// A row of `app_user` (selected with `app_user.*`). `suspended_until_ms` is read where the database
    /// has it: moderation's version (`account-8-moderation`) adds it.
    static func user(_ row: PostgresRow) throws -> UserRecord {
        let row = row.makeRandomAccess()
        let year = try row["birth_year"].decode(Int?.self)
        let month = try row["birth_month"].decode(Int?.self)
        let day = try row["birth_day"].decode(Int?.self)
        return UserRecord(
            id: try row["id"].decode(String.self), role: UserRole(rawValue: try row["role"].decode(String.self)),
            app: AppID(rawValue: try row["app"].decode(String.self)),
            email: try row["email"].decode(String?.self) ?? "", name: try row["name"].decode(String.self),
            phone: try row["phone"].decode(String.self), gender: try row["gender"].decode(Int.self),
            birthDate: year.flatMap { year in
                month.flatMap { month in day.map { DateParts(year: year, month: month, day: $0) } }
            },
            profileImageID: try row["profile_image_id"].decode(String.self),
            favouriteStyle: try row["favourite_style"].decode(String.self),
            passwordHash: try row["password_hash"].decode(String?.self),
            createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self),
            nickname: try row["nickname"].decode(String?.self),
            suspendedUntilMilliseconds: row.contains("suspended_until_ms")
                ? try row["suspended_until_ms"].decode(Int64?.self) : nil)
    }

    /// A row of `designer` (selected with `designer.*`).
    static func designer(_ row: PostgresRow) throws -> DesignerRecord {
        let row = row.makeRandomAccess()
        return DesignerRecord(
            userID: try row["user_id"].decode(String.self), description: try row["description"].decode(String.self),
            skills: try decode([String].self, try row["skills"].decode(String.self)),
            rank: try row["rank"].decode(Int.self), followerCount: try row["follower_count"].decode(Int64.self),
            shop: ShopRecord(
                name: try row["shop_name"].decode(String.self), phone: try row["shop_phone"].decode(String.self),
                city: try row["city"].decode(String.self), district: try row["district"].decode(String.self),
                detail: try row["detail"].decode(String.self), latitude: try row["latitude"].decode(Double.self),
                longitude: try row["longitude"].decode(Double.self),
                openingHour: try row["opening_hour"].decode(Int.self),
                closingHour: try row["closing_hour"].decode(Int.self),
                messengerLinks: try decode(
                    [MessengerLinkRecord].self, try row["messenger_links"].decode(String.self)),
                timeZone: try row["time_zone"].decode(String.self)))
    }

    /// A designer as lists show them: `app_user.*` with the designer's rank, shop name, district and count.
    static func summary(_ row: PostgresRow) throws -> DesignerSummaryRecord {
        let cells = row.makeRandomAccess()
        return DesignerSummaryRecord(
            user: try user(row), rank: try cells["rank"].decode(Int.self),
            shopName: try cells["shop_name"].decode(String.self), district: try cells["district"].decode(String.self),
            followerCount: try cells["follower_count"].decode(Int64.self))
    }

    static func recentSearches(_ userID: String, _ tx: PostgresTransaction) async throws -> [RecentSearchRecord] {
        try await tx.query(
            """
            SELECT id, kind, value, searched_at_ms FROM recent_search WHERE user_id = \(userID)
            ORDER BY searched_at_ms DESC, seq DESC
            """
        ).map { row in
            let (id, kind, value, searchedAt) = try row.decode((String, String, String, Int64).self)
            return RecentSearchRecord(
                id: id, kind: RecentSearchKind(rawValue: kind) ?? .query, value: value,
                searchedAtMilliseconds: searchedAt)
        }
    }

    /// A `bytea` bind: `[UInt8]` alone would be bound as an array of "char".
    static func bytea(_ bytes: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: bytes) }

    static func bytes(_ cell: PostgresCell) throws -> [UInt8] {
        Array(try cell.decode(ByteBuffer.self).readableBytesView)
    }

    static func json<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    /// Holds the transaction-level advisory lock `name` until `tx` ends: what serializes read-decide-write
    /// steps whose rows may not exist yet (a row lock needs a row).
    static func lock(_ name: String, _ tx: PostgresTransaction) async throws {
        try await tx.query("SELECT pg_advisory_xact_lock(hashtextextended(\(name), 0))")
    }

    /// The one number a `WITH gone AS (DELETE … RETURNING 1) SELECT count(*) FROM gone` answers.
    static func count(_ query: PostgresQuery, _ tx: PostgresTransaction) async throws -> Int {
        try await tx.query(query).first?.decode(Int.self) ?? 0
    }
}
