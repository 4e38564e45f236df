import GRDB
import RPCAccess
import ServiceRuntime

/// `ZipadooFriendStore` on AccountService's SQLite database. A pair's row is keyed by (lower id, higher
/// id); `requester_id` says who asked and `accepted_at_ms` whether it is a friendship yet.
struct SQLiteZipadooFriendStore: ZipadooFriendStore {
    static let app: AppID = "zipadoo"

    /// The accounts' store on the same database: a sign-up writes its user and session rows.
    let accounts: SQLiteAccountStore
    var database: ServiceDatabase { accounts.database }

    func signUp(_ user: UserRecord, mole: String, session: SessionRecord) async throws {
        do {
            try await database.write { db in
                try accounts.insertAccount(user, designer: nil, session: session, db)
                try db.execute(
                    sql: "INSERT INTO zipadoo_member (user_id, mole) VALUES (?, ?)", arguments: [user.id, mole])
            }
        } catch let error as DatabaseError where SQLiteAccountStore.isEmailTaken(error) {
            throw ZipadooFriendError.emailTaken
        } catch let error as DatabaseError where SQLiteAccountStore.isNicknameTaken(error) {
            throw ZipadooFriendError.nicknameTaken
        }
    }

    func profile(userID: String) async throws -> ZipadooProfileRecord? {
        try await database.read { db in try Self.profile(userID, db) }
    }

    func updateProfile(userID: String, imageID: String, nickname: String, phone: String, mole: String) async throws
        -> ZipadooProfileRecord
    {
        do {
            return try await database.write { db in
                try db.execute(
                    sql: """
                        UPDATE user SET profile_image_id = ?, nickname = ?, phone = ?
                        WHERE id = ? AND app = ?
                        """,
                    arguments: [imageID, nickname, phone, userID, Self.app.rawValue])
                guard db.changesCount == 1 else { throw ZipadooFriendError.unknownUser }
                try db.execute(
                    sql: """
                        INSERT INTO zipadoo_member (user_id, mole) VALUES (?, ?)
                        ON CONFLICT (user_id) DO UPDATE SET mole = excluded.mole
                        """,
                    arguments: [userID, mole])
                guard let profile = try Self.profile(userID, db) else { throw ZipadooFriendError.unknownUser }
                return profile
            }
        } catch let error as DatabaseError where SQLiteAccountStore.isNicknameTaken(error) {
            throw ZipadooFriendError.nicknameTaken
        }
    }

    func request(from: String, nickname: String, now: Int64) async throws -> String {
        try await database.write { db in
            guard
                let to = try String.fetchOne(
                    db, sql: "SELECT id FROM user WHERE app = ? AND nickname = ?",
                    arguments: [Self.app.rawValue, nickname])
            else { throw ZipadooFriendError.noSuchNickname }
            guard to != from else { throw ZipadooFriendError.yourself }
            let (low, high) = Self.pair(from, to)
            if let row = try Row.fetchOne(
                db,
                sql: "SELECT requester_id, accepted_at_ms FROM zipadoo_friendship WHERE user_low = ? AND user_high = ?",
                arguments: [low, high])
            {
                if (row["accepted_at_ms"] as Int64?) != nil { throw ZipadooFriendError.alreadyFriends }
                throw (row["requester_id"] as String) == from
                    ? ZipadooFriendError.alreadyRequested : ZipadooFriendError.theyRequested
            }
            try db.execute(
                sql: """
                    INSERT INTO zipadoo_friendship (user_low, user_high, requester_id, created_at_ms)
                    VALUES (?, ?, ?, ?)
                    """,
                arguments: [low, high, from, now])
            return to
        }
    }

    func accept(userID: String, requester: String, now: Int64) async throws {
        try await database.write { db in
            let row = try Self.pending(userID, requester, db)
            guard (row["requester_id"] as String) == requester else { throw ZipadooFriendError.notRecipient }
            let (low, high) = Self.pair(userID, requester)
            try db.execute(
                sql: "UPDATE zipadoo_friendship SET accepted_at_ms = ? WHERE user_low = ? AND user_high = ?",
                arguments: [now, low, high])
        }
    }

    func decline(userID: String, requester: String) async throws {
        try await database.write { db in
            let row = try Self.pending(userID, requester, db)
            guard (row["requester_id"] as String) == requester else { throw ZipadooFriendError.notRecipient }
            let (low, high) = Self.pair(userID, requester)
            try db.execute(
                sql: "DELETE FROM zipadoo_friendship WHERE user_low = ? AND user_high = ?", arguments: [low, high])
        }
    }

    func remove(userID: String, friend: String) async throws {
        try await database.write { db in
            let (low, high) = Self.pair(userID, friend)
            try db.execute(
                sql: """
                    DELETE FROM zipadoo_friendship
                    WHERE user_low = ? AND user_high = ? AND accepted_at_ms IS NOT NULL
                    """,
                arguments: [low, high])
            guard db.changesCount == 1 else { throw ZipadooFriendError.notFriends }
        }
    }

    func friends(of userID: String) async throws -> [ZipadooMemberRecord] {
        try await database.read { db in
            try Self.members(
                db,
                sql: """
                    SELECT f.other AS id FROM (
                        SELECT user_high AS other, accepted_at_ms FROM zipadoo_friendship WHERE user_low = ?1
                        UNION ALL
                        SELECT user_low AS other, accepted_at_ms FROM zipadoo_friendship WHERE user_high = ?1
                    ) f WHERE f.accepted_at_ms IS NOT NULL
                    """,
                order: "u.nickname", arguments: [userID])
        }
    }

    func requests(of userID: String) async throws -> (incoming: [ZipadooMemberRecord], outgoing: [ZipadooMemberRecord])
    {
        try await database.read { db in
            let pending = """
                SELECT f.other AS id, f.created_at_ms AS at FROM (
                    SELECT user_high AS other, requester_id, created_at_ms, accepted_at_ms
                        FROM zipadoo_friendship WHERE user_low = ?1
                    UNION ALL
                    SELECT user_low AS other, requester_id, created_at_ms, accepted_at_ms
                        FROM zipadoo_friendship WHERE user_high = ?1
                ) f WHERE f.accepted_at_ms IS NULL
                """
            let incoming = try Self.members(
                db, sql: pending + " AND f.requester_id = f.other", order: "p.at, u.id", arguments: [userID])
            let outgoing = try Self.members(
                db, sql: pending + " AND f.requester_id = ?1", order: "p.at, u.id", arguments: [userID])
            return (incoming, outgoing)
        }
    }

    func friendIDs(of userID: String, among candidates: [String]) async throws -> [String] {
        guard !candidates.isEmpty else { return [] }
        let friends = Set(
            try await database.read { db in
                try String.fetchAll(
                    db,
                    sql: """
                        SELECT user_high FROM zipadoo_friendship WHERE user_low = ?1 AND accepted_at_ms IS NOT NULL
                        UNION ALL
                        SELECT user_low FROM zipadoo_friendship WHERE user_high = ?1 AND accepted_at_ms IS NOT NULL
                        """,
                    arguments: [userID])
            })
        return candidates.filter { friends.contains($0) }
    }

    // MARK: Rows

    static func pair(_ a: String, _ b: String) -> (String, String) { a < b ? (a, b) : (b, a) }

    /// The pending row between the two (`noRequest` without one, `alreadyFriends` when accepted).
    static func pending(_ a: String, _ b: String, _ db: Database) throws -> Row {
        let (low, high) = pair(a, b)
        guard
            let row = try Row.fetchOne(
                db,
                sql: "SELECT requester_id, accepted_at_ms FROM zipadoo_friendship WHERE user_low = ? AND user_high = ?",
                arguments: [low, high])
        else { throw ZipadooFriendError.noRequest }
        if (row["accepted_at_ms"] as Int64?) != nil { throw ZipadooFriendError.alreadyFriends }
        return row
    }

    /// The members whose ids `sql` selects (as `id`, aliased `p`), ordered by `order` (over `u` and `p`).
    static func members(_ db: Database, sql: String, order: String, arguments: StatementArguments) throws
        -> [ZipadooMemberRecord]
    {
        try Row.fetchAll(
            db,
            sql: """
                SELECT u.id, u.nickname, u.name, u.profile_image_id, COALESCE(m.mole, '') AS mole
                FROM (\(sql)) p JOIN user u ON u.id = p.id LEFT JOIN zipadoo_member m ON m.user_id = u.id
                ORDER BY \(order)
                """,
            arguments: arguments
        ).map(member)
    }

    static func member(_ row: Row) -> ZipadooMemberRecord {
        ZipadooMemberRecord(
            userID: row["id"], nickname: row["nickname"] ?? "", name: row["name"], mole: row["mole"],
            profileImageID: row["profile_image_id"])
    }

    static func profile(_ userID: String, _ db: Database) throws -> ZipadooProfileRecord? {
        guard
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT u.id, u.nickname, u.name, u.profile_image_id, u.email, u.phone, u.created_at_ms,
                        COALESCE(m.mole, '') AS mole
                    FROM user u LEFT JOIN zipadoo_member m ON m.user_id = u.id
                    WHERE u.id = ? AND u.app = ?
                    """,
                arguments: [userID, app.rawValue])
        else { return nil }
        return ZipadooProfileRecord(
            member: member(row), email: row["email"] ?? "", phone: row["phone"],
            createdAtMilliseconds: row["created_at_ms"])
    }
}
