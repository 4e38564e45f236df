import Logging
import PostgresNIO
import RPCAccess
import ServiceRuntime

/// `SlpStore` on PostgreSQL, for several replicas of AccountService on one database: profiles and the
/// queue here; the search in `+Nearby`, requests, matches and ratings in `+Matches`, SignUp in `+SignUp`,
/// account deletion's part in `+Deletion`.
///
/// Pairing is decided under row locks, not by the unique index alone. Every write that reads a member's
/// queue or match state and then changes it first locks every member it may change (both sides of a
/// request, accept, end or rating; the member entering or leaving the queue): their `app_user` rows
/// `FOR KEY SHARE`, then their `slp_profile` rows `FOR UPDATE`, each in one `SELECT … ORDER BY id`
/// (`lockMembers`). PostgreSQL locks the rows in that order, so two transactions wanting two members
/// each take them in the same order and never deadlock, and every check after the lock (READ
/// COMMITTED: each statement sees what committed before it) sees the other's commit. A profile row
/// exists for every member, queued or not, whereas a queue row comes and goes, and an advisory lock would
/// not go with the account. The key-share lock on the account comes first because account deletion
/// takes the account row `FOR UPDATE` before SLP's part (`forget`) locks the profiles: the same order,
/// so a request (whose notification row references the account asked) never deadlocks with a
/// deletion, and a member being deleted makes no new request, match or notification meanwhile.
///
/// Why not the constraint alone: `slp_one_active_match` refuses a member's second active match (a
/// concurrent insert waits for the first's commit, then fails), but as an error, not as the answer
/// `alreadyMatched`/`otherMatched` the app expects; and it guards nothing of the queue (two requests of
/// each other at once both stored and nobody matched, entering while being matched). It stays as the
/// last word, as on SQLite.
struct PostgresSlpStore: SlpStore {
    static let app: AppID = "slp"
    static let logger = Logger(label: "yedi.account.postgres.slp")

    let postgres: ServicePostgres
    /// Tells the requested member (inbox and push) in the request's transaction; nil in store tests.
    let notifier: PostgresNotifier?
    /// Tells ChatService to open and close match rooms, in the transactions that start and end matches;
    /// nil in store tests.
    let events: PostgresAccountEvents?

    func createProfile(_ profile: SlpProfileRecord) async throws -> Bool {
        try await postgres.write { tx in
            // FOR KEY SHARE: the account cannot be deleted between this check and the insert.
            guard
                try await !tx.query(
                    """
                    SELECT 1 FROM app_user WHERE id = \(profile.userID) AND app = \(Self.app.rawValue) FOR KEY SHARE
                    """
                ).isEmpty
            else { throw SlpStoreError.unknownUser }
            return try await Self.insert(profile, tx)
        }
    }

    func profile(userID: String) async throws -> SlpProfileRecord? {
        try await postgres.snapshot { tx in try await Self.profile(userID, tx) }
    }

    func updateProfile(userID: String, _ update: SlpProfileUpdate) async throws -> SlpProfileRecord {
        try await postgres.write { tx in
            guard let current = try await Self.profile(userID, tx, withComments: false) else {
                throw SlpStoreError.noProfile
            }
            guard current.ownedAvatars.contains(update.avatar) else { throw SlpStoreError.notOwned("avatar") }
            guard current.ownedBackgrounds.contains(update.background) else {
                throw SlpStoreError.notOwned("background")
            }
            // Only the editable fields: a rating or a dodge changing the same row meanwhile is kept.
            try await tx.query(
                """
                UPDATE slp_profile SET gender = \(update.gender), favourite_study = \(update.favouriteStudy),
                    searchable = \(update.searchable), partner_min_age = \(update.partnerMinAge),
                    partner_max_age = \(update.partnerMaxAge), avatar = \(update.avatar), background = \(update.background)
                WHERE user_id = \(userID)
                """)
            guard let updated = try await Self.profile(userID, tx) else { throw SlpStoreError.noProfile }
            return updated
        }
    }

    func state(userID: String) async throws -> SlpStateRecord {
        try await postgres.snapshot { tx in
            guard try await Self.hasProfile(userID, tx) else { throw SlpStoreError.noProfile }
            let queued = try await Self.isQueued(userID, tx)
            guard
                let last = try await tx.query(
                    """
                    SELECT mm.match_id, mm.partner_id, mm.active, m.ended_by, m.end_reason, u.nickname,
                        EXISTS (SELECT 1 FROM slp_rating r WHERE r.match_id = mm.match_id AND r.rater_id = mm.user_id)
                    FROM slp_match_member mm JOIN slp_match m ON m.id = mm.match_id
                    LEFT JOIN app_user u ON u.id = mm.partner_id
                    WHERE mm.user_id = \(userID) ORDER BY mm.created_at_ms DESC, mm.seq DESC LIMIT 1
                    """
                ).first
            else {
                return SlpStateRecord(
                    queued: queued, active: nil, partnerNickname: "", lastMatchID: nil, dodged: false, rated: false)
            }
            let (matchID, partnerID, active, endedBy, reason, nickname, rated) = try last.decode(
                (String, String, Bool, String?, String?, String?, Bool).self)
            return SlpStateRecord(
                queued: queued, active: active ? SlpActiveMatch(matchID: matchID, partnerID: partnerID) : nil,
                partnerNickname: active ? (nickname ?? "") : "", lastMatchID: matchID,
                dodged: reason == "dodge" && endedBy == partnerID, rated: rated)
        }
    }

    func enterQueue(userID: String, at point: GeoPoint, studies: [String], now: Int64) async throws
        -> SlpEnterOutcome
    {
        try await postgres.write { tx in
            // Locked: a match of this member being made elsewhere finishes first (and is seen below), or
            // waits for this entry (and takes it out).
            guard try await Self.lockMembers([userID], tx).contains(userID),
                let profile = try await Self.profile(userID, tx, withComments: false)
            else { throw SlpStoreError.noProfile }
            if let active = try await Self.activeMatch(of: userID, tx) { return .alreadyMatched(active) }
            if let penalty = SlpRules.penalty(
                dodgeCount: profile.dodgeCount, lastDodge: profile.lastDodgeAtMilliseconds, now: now)
            {
                return .penalty(tier: penalty.tier, endsAtMilliseconds: penalty.endsAt)
            }
            // A second entry keeps the row (and its id, the search's tie-breaker), as SQLite's upsert does.
            try await tx.query(
                """
                INSERT INTO slp_queue (user_id, latitude, longitude, studies, entered_at_ms)
                VALUES (\(userID), \(point.latitude), \(point.longitude), \(studies.joined(separator: "\n")), \(now))
                ON CONFLICT (user_id) DO UPDATE SET latitude = excluded.latitude, longitude = excluded.longitude,
                    studies = excluded.studies, entered_at_ms = excluded.entered_at_ms
                """)
            return .entered
        }
    }

    func leaveQueue(userID: String) async throws -> SlpActiveMatch? {
        try await postgres.write { tx in
            guard try await Self.lockMembers([userID], tx).contains(userID) else { throw SlpStoreError.noProfile }
            if let active = try await Self.activeMatch(of: userID, tx) { return active }
            try await Self.dequeue([userID], tx)
            return nil
        }
    }

    /// The stale members are locked like any other change of their queue state, so a request or match
    /// being decided for one of them finishes first, and an entry renewed meanwhile is kept (the delete
    /// checks the time again).
    func pruneQueue(enteredBefore: Int64) async throws -> Int {
        try await postgres.write { tx in
            let stale = try await tx.query(
                "SELECT user_id FROM slp_queue WHERE entered_at_ms < \(enteredBefore)"
            ).map { try $0.decode(String.self) }
            var pruned: [String] = []
            if !stale.isEmpty {
                _ = try await Self.lockProfiles(stale, tx)
                pruned = try await tx.query(
                    """
                    DELETE FROM slp_queue WHERE user_id = ANY(\(stale)) AND entered_at_ms < \(enteredBefore)
                    RETURNING user_id
                    """
                ).map { try $0.decode(String.self) }
                try await tx.query("DELETE FROM slp_request WHERE from_id = ANY(\(pruned)) OR to_id = ANY(\(pruned))")
            }
            // Used sign-up tickets are remembered only while they would have worked.
            try await tx.query("DELETE FROM slp_used_ticket WHERE expires_at_ms < \(enteredBefore)")
            return pruned.count
        }
    }

    // MARK: Locks and state

    /// Locks members for a change of their SLP state (see the type's comment): their accounts, then their
    /// profiles, each in id order; answers those with a profile.
    static func lockMembers(_ userIDs: [String], _ tx: PostgresTransaction) async throws -> Set<String> {
        try await tx.query("SELECT 1 FROM app_user WHERE id = ANY(\(userIDs)) ORDER BY id FOR KEY SHARE")
        return try await lockProfiles(userIDs, tx)
    }

    /// Locks the profiles of `userIDs` for the transaction, in user-id order (the one order every
    /// transaction of this store takes them in); answers those that exist. Alone (without the accounts)
    /// where the caller holds the account already (`forget`) or changes no account's rows (`pruneQueue`).
    static func lockProfiles(_ userIDs: [String], _ tx: PostgresTransaction) async throws -> Set<String> {
        Set(
            try await tx.query(
                "SELECT user_id FROM slp_profile WHERE user_id = ANY(\(userIDs)) ORDER BY user_id FOR UPDATE"
            ).map { try $0.decode(String.self) })
    }

    static func hasProfile(_ userID: String, _ tx: PostgresTransaction) async throws -> Bool {
        try await !tx.query("SELECT 1 FROM slp_profile WHERE user_id = \(userID)").isEmpty
    }

    static func isQueued(_ userID: String, _ tx: PostgresTransaction) async throws -> Bool {
        try await !tx.query("SELECT 1 FROM slp_queue WHERE user_id = \(userID)").isEmpty
    }

    static func activeMatch(of userID: String, _ tx: PostgresTransaction) async throws -> SlpActiveMatch? {
        try await tx.query(
            "SELECT match_id, partner_id FROM slp_match_member WHERE user_id = \(userID) AND active"
        ).first.map { row in
            let (matchID, partnerID) = try row.decode((String, String).self)
            return SlpActiveMatch(matchID: matchID, partnerID: partnerID)
        }
    }

    /// Takes members out of the queue (their positions are in the rows) with every request to or from them.
    static func dequeue(_ userIDs: [String], _ tx: PostgresTransaction) async throws {
        try await tx.query("DELETE FROM slp_queue WHERE user_id = ANY(\(userIDs))")
        try await tx.query("DELETE FROM slp_request WHERE from_id = ANY(\(userIDs)) OR to_id = ANY(\(userIDs))")
    }
}
