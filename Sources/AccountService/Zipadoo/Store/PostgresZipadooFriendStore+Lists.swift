import PostgresNIO
import ServiceRuntime

/// Friends, requests and profiles as read on PostgreSQL. Orders are SQLite's (byte order, `COLLATE "C"`,
/// NULLs first) whatever the database's collation.
extension PostgresZipadooFriendStore {
    func friends(of userID: String) async throws -> [ZipadooMemberRecord] {
        try await rows(
            """
            SELECT u.id, u.nickname, u.name, u.profile_image_id, COALESCE(m.mole, '') AS mole
            FROM (
                SELECT user_high AS id FROM zipadoo_friendship
                WHERE user_low = \(userID) AND accepted_at_ms IS NOT NULL
                UNION ALL
                SELECT user_low AS id FROM zipadoo_friendship
                WHERE user_high = \(userID) AND accepted_at_ms IS NOT NULL
            ) p JOIN app_user u ON u.id = p.id LEFT JOIN zipadoo_member m ON m.user_id = u.id
            ORDER BY u.nickname COLLATE "C" NULLS FIRST
            """
        ).map(Self.member)
    }

    /// Both lists from one snapshot.
    func requests(of userID: String) async throws -> (incoming: [ZipadooMemberRecord], outgoing: [ZipadooMemberRecord])
    {
        try await postgres.snapshot { tx in
            let incoming = try await tx.query(Self.pending(userID, outgoing: false)).map(Self.member)
            let outgoing = try await tx.query(Self.pending(userID, outgoing: true)).map(Self.member)
            return (incoming, outgoing)
        }
    }

    func friendIDs(of userID: String, among candidates: [String]) async throws -> [String] {
        guard !candidates.isEmpty else { return [] }
        let friends = Set(
            try await rows(
                """
                SELECT user_high FROM zipadoo_friendship WHERE user_low = \(userID) AND accepted_at_ms IS NOT NULL
                UNION ALL
                SELECT user_low FROM zipadoo_friendship WHERE user_high = \(userID) AND accepted_at_ms IS NOT NULL
                """
            ).map { try $0.decode(String.self) })
        return candidates.filter { friends.contains($0) }
    }

    // MARK: Rows

    /// The pending requests the member sent (`outgoing`) or was sent, oldest first.
    static func pending(_ userID: String, outgoing: Bool) -> PostgresQuery {
        """
        SELECT u.id, u.nickname, u.name, u.profile_image_id, COALESCE(m.mole, '') AS mole
        FROM (
            SELECT user_high AS id, requester_id, created_at_ms FROM zipadoo_friendship
            WHERE user_low = \(userID) AND accepted_at_ms IS NULL
            UNION ALL
            SELECT user_low AS id, requester_id, created_at_ms FROM zipadoo_friendship
            WHERE user_high = \(userID) AND accepted_at_ms IS NULL
        ) p JOIN app_user u ON u.id = p.id LEFT JOIN zipadoo_member m ON m.user_id = u.id
        WHERE (p.requester_id = \(userID)) = \(outgoing)
        ORDER BY p.created_at_ms, u.id COLLATE "C"
        """
    }

    static func profileQuery(_ userID: String) -> PostgresQuery {
        """
        SELECT u.id, u.nickname, u.name, u.profile_image_id, COALESCE(m.mole, '') AS mole, u.email, u.phone,
            u.created_at_ms
        FROM app_user u LEFT JOIN zipadoo_member m ON m.user_id = u.id
        WHERE u.id = \(userID) AND u.app = \(app.rawValue)
        """
    }

    /// A row of `friends` or `pending`: id, nickname, name, image, mole.
    static func member(_ row: PostgresRow) throws -> ZipadooMemberRecord {
        let (id, nickname, name, imageID, mole) = try row.decode((String, String?, String, String, String).self)
        return ZipadooMemberRecord(
            userID: id, nickname: nickname ?? "", name: name, mole: mole, profileImageID: imageID)
    }

    static func profile(_ row: PostgresRow) throws -> ZipadooProfileRecord {
        let (id, nickname, name, imageID, mole, email, phone, created) = try row.decode(
            (String, String?, String, String, String, String?, String, Int64).self)
        return ZipadooProfileRecord(
            member: ZipadooMemberRecord(
                userID: id, nickname: nickname ?? "", name: name, mole: mole, profileImageID: imageID),
            email: email ?? "", phone: phone, createdAtMilliseconds: created)
    }

    /// One statement outside a transaction (one snapshot), its rows collected.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await postgres.read { connection in try await connection.query(query, logger: Self.logger).collect() }
    }
}
