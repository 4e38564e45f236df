import Logging
import PostgresNIO
import RPCAccess
import ServiceRuntime

/// `ZipadooFriendStore` on PostgreSQL, for several replicas on one database. A pair's row is keyed by
/// (lower id, higher id), as on SQLite. What SQLite's single writer decided alone is held here by the
/// pair's primary key (a request inserts or, finding the row, says why not) and by a lock on the pair's
/// row (accept and decline decide on the row they then change).
struct PostgresZipadooFriendStore: ZipadooFriendStore {
    static let app: AppID = "zipadoo"
    static let logger = Logger(label: "yedi.account.zipadoo.postgres")

    /// The accounts' store on the same database: a sign-up writes its user and session rows.
    let accounts: PostgresAccountStore
    var postgres: ServicePostgres { accounts.postgres }

    func signUp(_ user: UserRecord, mole: String, session: SessionRecord) async throws {
        let accounts = self.accounts
        do {
            try await postgres.write { tx in
                try await accounts.insertAccount(user, designer: nil, session: session, tx)
                try await tx.query("INSERT INTO zipadoo_member (user_id, mole) VALUES (\(user.id), \(mole))")
            }
        } catch let violation as PostgresConstraintViolation where violation.isUniqueViolation {
            switch violation.constraint {
            case "app_user_email_in_app": throw ZipadooFriendError.emailTaken
            case "app_user_nickname_in_app": throw ZipadooFriendError.nicknameTaken
            default: throw violation
            }
        }
    }

    func profile(userID: String) async throws -> ZipadooProfileRecord? {
        try await rows(Self.profileQuery(userID)).first.map(Self.profile)
    }

    func updateProfile(userID: String, imageID: String, nickname: String, phone: String, mole: String) async throws
        -> ZipadooProfileRecord
    {
        do {
            return try await postgres.write { tx in
                guard
                    try await !tx.query(
                        """
                        UPDATE app_user SET profile_image_id = \(imageID), nickname = \(nickname), phone = \(phone)
                        WHERE id = \(userID) AND app = \(Self.app.rawValue)
                        RETURNING 1
                        """
                    ).isEmpty
                else { throw ZipadooFriendError.unknownUser }
                try await tx.query(
                    """
                    INSERT INTO zipadoo_member (user_id, mole) VALUES (\(userID), \(mole))
                    ON CONFLICT (user_id) DO UPDATE SET mole = excluded.mole
                    """)
                guard let row = try await tx.query(Self.profileQuery(userID)).first else {
                    throw ZipadooFriendError.unknownUser
                }
                return try Self.profile(row)
            }
        } catch let violation as PostgresConstraintViolation where violation.constraint == "app_user_nickname_in_app" {
            throw ZipadooFriendError.nicknameTaken
        }
    }

    /// The insert comes first and yields to the pair's row: of crossing requests (A asks B while B asks
    /// A, on two replicas), the second waits on the primary key for the first's commit, inserts nothing,
    /// then reads the first's row and answers as SQLite would have (`theyRequested`).
    func request(from: String, nickname: String, now: Int64) async throws -> String {
        try await postgres.write { tx in
            guard
                let to = try await tx.query(
                    // Key-share locked: a deletion of that member makes this wait and find no one, rather
                    // than fail the friendship's foreign key later.
                    """
                    SELECT id FROM app_user WHERE app = \(Self.app.rawValue) AND nickname = \(nickname)
                    FOR KEY SHARE
                    """
                ).first?.decode(String.self)
            else { throw ZipadooFriendError.noSuchNickname }
            guard to != from else { throw ZipadooFriendError.yourself }
            let (low, high) = Self.pair(from, to)
            while true {
                let inserted = try await tx.query(
                    """
                    INSERT INTO zipadoo_friendship (user_low, user_high, requester_id, created_at_ms)
                    VALUES (\(low), \(high), \(from), \(now))
                    ON CONFLICT ON CONSTRAINT zipadoo_friendship_pair DO NOTHING
                    RETURNING 1
                    """)
                if !inserted.isEmpty { return to }
                // The row was there (or was being written and committed): why not. Gone again in between
                // (declined, removed), the insert goes again.
                if let row = try await tx.query(
                    """
                    SELECT requester_id, accepted_at_ms FROM zipadoo_friendship
                    WHERE user_low = \(low) AND user_high = \(high)
                    """
                ).first {
                    let (requester, accepted) = try row.decode((String, Int64?).self)
                    if accepted != nil { throw ZipadooFriendError.alreadyFriends }
                    throw requester == from ? ZipadooFriendError.alreadyRequested : ZipadooFriendError.theyRequested
                }
            }
        }
    }

    func accept(userID: String, requester: String, now: Int64) async throws {
        try await postgres.write { tx in
            try await Self.lockPending(recipient: userID, requester: requester, tx)
            let (low, high) = Self.pair(userID, requester)
            try await tx.query(
                """
                UPDATE zipadoo_friendship SET accepted_at_ms = \(now)
                WHERE user_low = \(low) AND user_high = \(high)
                """)
        }
    }

    func decline(userID: String, requester: String) async throws {
        try await postgres.write { tx in
            try await Self.lockPending(recipient: userID, requester: requester, tx)
            let (low, high) = Self.pair(userID, requester)
            try await tx.query("DELETE FROM zipadoo_friendship WHERE user_low = \(low) AND user_high = \(high)")
        }
    }

    func remove(userID: String, friend: String) async throws {
        try await postgres.write { tx in
            let (low, high) = Self.pair(userID, friend)
            guard
                try await !tx.query(
                    """
                    DELETE FROM zipadoo_friendship
                    WHERE user_low = \(low) AND user_high = \(high) AND accepted_at_ms IS NOT NULL
                    RETURNING 1
                    """
                ).isEmpty
            else { throw ZipadooFriendError.notFriends }
        }
    }

    static func pair(_ a: String, _ b: String) -> (String, String) { a < b ? (a, b) : (b, a) }

    /// Locks the pair's pending row until the transaction ends, so an accept and a decline (or two of
    /// either) decide one after the other on the row as the other left it: `noRequest` without one,
    /// `alreadyFriends` when accepted, `notRecipient` when `requester` did not send it.
    static func lockPending(recipient: String, requester: String, _ tx: PostgresTransaction) async throws {
        let (low, high) = pair(recipient, requester)
        guard
            let row = try await tx.query(
                """
                SELECT requester_id, accepted_at_ms FROM zipadoo_friendship
                WHERE user_low = \(low) AND user_high = \(high) FOR UPDATE
                """
            ).first
        else { throw ZipadooFriendError.noRequest }
        let (sender, accepted) = try row.decode((String, Int64?).self)
        if accepted != nil { throw ZipadooFriendError.alreadyFriends }
        guard sender == requester else { throw ZipadooFriendError.notRecipient }
    }
}
