import Foundation
import Logging
import PostgresNIO
import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// `AccountStore` on PostgreSQL, for several replicas of AccountService on one database
/// (docs/postgres.md, "Account on PostgreSQL"). Writes run at READ COMMITTED, each guarantee held by a
/// constraint, a row lock or a transaction-level advisory lock, method by method; reads that promise one
/// snapshot are one statement or a `snapshot` transaction.
struct PostgresAccountStore: AccountStore {
    let postgres: ServicePostgres
    /// What the other services are told, in the transaction of each change.
    let events: PostgresAccountEvents
    /// Deleted users' tokens stop working here in the deleting transaction.
    let revokedUsers: RevokedUsers

    static let logger = Logger(label: "yedi.account.postgres")

    // MARK: Users and designers

    func createUser(_ user: UserRecord, designer: DesignerRecord?, session: SessionRecord) async throws {
        try await Self.refusingTaken {
            try await postgres.write { tx in try await insertAccount(user, designer: designer, session: session, tx) }
        }
    }

    /// A new account's rows (user, designer profile, first session) and what the other services hear of
    /// it, in the caller's transaction. The search indexes follow the rows by themselves.
    func insertAccount(_ user: UserRecord, designer: DesignerRecord?, session: SessionRecord, _ tx: PostgresTransaction)
        async throws
    {
        try await Self.insert(user, tx)
        if let designer { try await Self.insert(designer, tx) }
        try await Self.insert(session, tx)
        try await events.accountCreated(user, designer: designer, in: tx)
    }

    /// Runs `write`, answering the unique constraints an account can break as `AccountStoreError`.
    static func refusingTaken(_ write: () async throws -> Void) async throws {
        do {
            try await write()
        } catch let violation as PostgresConstraintViolation where violation.isUniqueViolation {
            switch violation.constraint {
            case "app_user_email_in_app": throw AccountStoreError.emailTaken
            case "app_user_nickname_in_app": throw AccountStoreError.nicknameTaken
            case "user_identity_key": throw AccountStoreError.identityTaken
            default: throw violation
            }
        }
    }

    func user(id: String) async throws -> UserRecord? {
        try await rows("SELECT * FROM app_user WHERE id = \(id)").first.map(Self.user)
    }

    func user(app: AppID, email: String) async throws -> UserRecord? {
        try await rows("SELECT * FROM app_user WHERE app = \(app.rawValue) AND email = \(email)").first.map(Self.user)
    }

    func users(ids: [String]) async throws -> [UserRecord] {
        guard !ids.isEmpty else { return [] }
        return try await rows("SELECT * FROM app_user WHERE id = ANY(\(ids))").map(Self.user)
    }

    func shopCards(designerIDs ids: [String]) async throws -> [String: ShopCardRecord] {
        guard !ids.isEmpty else { return [:] }
        var cards: [String: ShopCardRecord] = [:]
        for row in try await rows("SELECT user_id, shop_name, city, district FROM designer WHERE user_id = ANY(\(ids))")
        {
            let (id, name, city, district) = try row.decode((String, String, String, String).self)
            cards[id] = ShopCardRecord(name: name, city: city, district: district)
        }
        return cards
    }

    func designer(id: String) async throws -> (UserRecord, DesignerRecord)? {
        guard
            let row = try await rows(
                """
                SELECT app_user.*, designer.* FROM designer JOIN app_user ON app_user.id = designer.user_id
                WHERE designer.user_id = \(id)
                """
            ).first
        else { return nil }
        return (try Self.user(row), try Self.designer(row))
    }

    func updateUser(_ user: UserRecord) async throws {
        try await postgres.write { tx in
            // The row lock holds `before` until the update: a concurrent change is compared with this one.
            guard
                let before = try await tx.query(
                    "SELECT name, profile_image_id FROM app_user WHERE id = \(user.id) FOR UPDATE"
                ).first
            else { throw AccountStoreError.notFound }
            let (name, profileImageID) = try before.decode((String, String).self)
            try await tx.query(
                """
                UPDATE app_user SET name = \(user.name), phone = \(user.phone), gender = \(user.gender),
                    birth_year = \(user.birthDate?.year), birth_month = \(user.birthDate?.month),
                    birth_day = \(user.birthDate?.day), profile_image_id = \(user.profileImageID),
                    favourite_style = \(user.favouriteStyle), password_hash = \(user.passwordHash)
                WHERE id = \(user.id)
                """)
            if name != user.name || profileImageID != user.profileImageID {
                try await events.publicFieldsChanged(userID: user.id, in: tx)
            }
        }
    }

    func updateDesigner(_ designer: DesignerRecord) async throws {
        let shop = designer.shop
        let skills = try Self.json(designer.skills)
        let links = try Self.json(shop.messengerLinks)
        try await postgres.write { tx in
            guard
                let card = try await tx.query(
                    "SELECT shop_name, city, district FROM designer WHERE user_id = \(designer.userID) FOR UPDATE"
                ).first
            else { throw AccountStoreError.notFound }
            let (name, city, district) = try card.decode((String, String, String).self)
            try await tx.query(
                """
                UPDATE designer SET description = \(designer.description), skills = \(skills), rank = \(designer.rank),
                    shop_name = \(shop.name), shop_phone = \(shop.phone), city = \(shop.city), district = \(shop.district),
                    detail = \(shop.detail), latitude = \(shop.latitude), longitude = \(shop.longitude),
                    opening_hour = \(shop.openingHour), closing_hour = \(shop.closingHour), messenger_links = \(links),
                    time_zone = \(shop.timeZone)
                WHERE user_id = \(designer.userID)
                """)
            if name != shop.name || city != shop.city || district != shop.district {
                try await events.publicFieldsChanged(userID: designer.userID, in: tx)
            }
        }
    }

    /// One statement outside a transaction (one snapshot), its rows collected.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await postgres.read { connection in try await connection.query(query, logger: Self.logger).collect() }
    }
}
