import GRDB
import ServiceRuntime

/// Requests, matches and ratings: each decided and written in one write transaction (SQLite runs them
/// one at a time), with the unique index on active match members as the last word on pairing.
extension SQLiteSlpStore {
    func request(from: String, to: String, matchID: String, now: Int64) async throws -> SlpRequestOutcome {
        let notifier = self.notifier
        let events = self.events
        return try await database.write { db in
            guard let me = try Self.profile(from, db, withComments: false) else { throw SlpStoreError.noProfile }
            if let active = try Self.activeMatch(of: from, db) { return .alreadyMatched(active) }
            guard try Self.queueID(of: from, db) != nil else { throw SlpStoreError.notQueued }
            guard try Self.hasProfile(to, db) else { throw SlpStoreError.unknownUser }
            guard try Self.activeMatch(of: to, db) == nil, try Self.queueID(of: to, db) != nil else {
                return .otherNotSearching
            }
            if try Self.requested(by: to, of: from, db) {
                try Self.match(from, to, id: matchID, now: now, db, events: events)
                return .matched(matchID)
            }
            try db.execute(
                sql: """
                    INSERT INTO slp_request (from_id, to_id, created_at_ms) VALUES (?, ?, ?)
                    ON CONFLICT (from_id, to_id) DO UPDATE SET created_at_ms = excluded.created_at_ms
                    """,
                arguments: [from, to, now])
            try notifier?.notify(
                userID: to, app: Self.app,
                NotificationContent(
                    kind: "slp-request", title: "스터디 요청",
                    body: "\(me.nickname)님이 함께 공부하자고 요청했어요",
                    data: [(key: "from_id", value: from)]),
                in: db)
            return .sent
        }
    }

    func accept(userID: String, other: String, matchID: String, now: Int64) async throws -> SlpAcceptOutcome {
        let events = self.events
        return try await database.write { db in
            guard try Self.hasProfile(userID, db) else { throw SlpStoreError.noProfile }
            guard try Self.hasProfile(other, db) else { throw SlpStoreError.unknownUser }
            if let active = try Self.activeMatch(of: userID, db) { return .alreadyMatched(active) }
            if try Self.activeMatch(of: other, db) != nil { return .otherMatched }
            guard try Self.queueID(of: other, db) != nil else { return .otherNotSearching }
            guard try Self.requested(by: other, of: userID, db) else { throw SlpStoreError.noRequest }
            guard try Self.queueID(of: userID, db) != nil else { throw SlpStoreError.notQueued }
            try Self.match(userID, other, id: matchID, now: now, db, events: events)
            return .matched(matchID)
        }
    }

    func endMatch(userID: String, other: String, now: Int64) async throws -> Int? {
        let events = self.events
        return try await database.write { db in
            guard try Self.hasProfile(userID, db) else { throw SlpStoreError.noProfile }
            guard let active = try Self.activeMatch(of: userID, db), active.partnerID == other else { return nil }
            try Self.end(active.matchID, by: userID, reason: "dodge", now: now, db, events: events)
            try db.execute(
                sql: "UPDATE slp_profile SET dodge_count = dodge_count + 1, last_dodge_at_ms = ? WHERE user_id = ?",
                arguments: [now, userID])
            return try Int.fetchOne(
                db, sql: "SELECT dodge_count FROM slp_profile WHERE user_id = ?", arguments: [userID]) ?? 0
        }
    }

    func rate(_ rating: SlpRatingRecord) async throws -> Bool {
        let events = self.events
        return try await database.write { db in
            guard try Self.hasProfile(rating.raterID, db) else { throw SlpStoreError.noProfile }
            guard
                let member = try Row.fetchOne(
                    db, sql: "SELECT partner_id, active FROM slp_match_member WHERE match_id = ? AND user_id = ?",
                    arguments: [rating.matchID, rating.raterID])
            else { throw SlpStoreError.notYourMatch }
            let partnerID: String = member["partner_id"]
            let active: Bool = member["active"]
            guard
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM slp_rating WHERE match_id = ? AND rater_id = ?",
                    arguments: [rating.matchID, rating.raterID]) != true
            else { throw SlpStoreError.alreadyRated }
            try db.execute(
                sql: """
                    INSERT INTO slp_rating (match_id, rater_id, ratee_id, flags, comment, created_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    rating.matchID, rating.raterID, partnerID, SlpRules.encode(rating.flags.map { $0 ? 1 : 0 }),
                    rating.comment, rating.createdAtMilliseconds,
                ])
            if let text = try String.fetchOne(
                db, sql: "SELECT reputation FROM slp_profile WHERE user_id = ?", arguments: [partnerID])
            {
                var counters = SlpRules.decode(text)
                counters += Array(repeating: 0, count: max(0, SlpRules.ratingFlags - counters.count))
                for (index, flag) in rating.flags.enumerated() where flag && index < counters.count {
                    counters[index] += 1
                }
                try db.execute(
                    sql: "UPDATE slp_profile SET reputation = ? WHERE user_id = ?",
                    arguments: [SlpRules.encode(counters), partnerID])
            }
            guard active else { return false }
            try Self.end(
                rating.matchID, by: rating.raterID, reason: "rating", now: rating.createdAtMilliseconds, db,
                events: events)
            return true
        }
    }

    func match(id: String) async throws -> (members: (String, String), active: Bool)? {
        try await database.read { db in
            try Row.fetchOne(
                db, sql: "SELECT user_a, user_b, ended_at_ms FROM slp_match WHERE id = ?", arguments: [id]
            ).map { row in
                let ended: Int64? = row["ended_at_ms"]
                return (members: (row["user_a"], row["user_b"]), active: ended == nil)
            }
        }
    }

    func isPartner(_ other: String, of userID: String) async throws -> Bool {
        try await database.read { db in
            try Bool.fetchOne(
                db, sql: "SELECT 1 FROM slp_match_member WHERE user_id = ? AND partner_id = ? LIMIT 1",
                arguments: [userID, other]) == true
        }
    }

    // MARK: Rows

    static func requested(by from: String, of to: String, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db, sql: "SELECT 1 FROM slp_request WHERE from_id = ? AND to_id = ?", arguments: [from, to]) == true
    }

    /// Pairs two members: the match and its two member rows (the unique index refuses a second active
    /// match of either), both out of the queue, every request of either gone, and the room's job.
    static func match(
        _ first: String, _ second: String, id: String, now: Int64, _ db: Database, events: AccountEvents?
    ) throws {
        try db.execute(
            sql: "INSERT INTO slp_match (id, user_a, user_b, created_at_ms) VALUES (?, ?, ?, ?)",
            arguments: [id, first, second, now])
        try db.execute(
            sql: """
                INSERT INTO slp_match_member (match_id, user_id, partner_id, active, created_at_ms)
                VALUES (?, ?, ?, 1, ?), (?, ?, ?, 1, ?)
                """,
            arguments: [id, first, second, now, id, second, first, now])
        try dequeue([first, second], db)
        try events?.matchStarted(matchID: id, members: (first, second), in: db)
    }

    /// Ends an active match for both members, and closes its room.
    static func end(
        _ matchID: String, by userID: String, reason: String, now: Int64, _ db: Database, events: AccountEvents?
    ) throws {
        try db.execute(
            sql:
                "UPDATE slp_match SET ended_at_ms = ?, ended_by = ?, end_reason = ? WHERE id = ? AND ended_at_ms IS NULL",
            arguments: [now, userID, reason, matchID])
        try db.execute(sql: "UPDATE slp_match_member SET active = 0 WHERE match_id = ?", arguments: [matchID])
        try events?.matchEnded(matchID: matchID, in: db)
    }
}
