import PostgresNIO
import ServiceRuntime

/// Requests, matches and ratings on PostgreSQL: each decided and written in one transaction that first
/// locks both members in user-id order (see `PostgresSlpStore`), then checks in SQLite's order,
/// so concurrent calls on any replicas are answered as if they had run one after the other.
extension PostgresSlpStore {
    func request(from: String, to: String, matchID: String, now: Int64) async throws -> SlpRequestOutcome {
        let notifier = self.notifier
        let events = self.events
        return try await postgres.write { tx in
            let members = try await Self.lockMembers([from, to], tx)
            guard members.contains(from) else { throw SlpStoreError.noProfile }
            if let active = try await Self.activeMatch(of: from, tx) { return .alreadyMatched(active) }
            guard try await Self.isQueued(from, tx) else { throw SlpStoreError.notQueued }
            guard members.contains(to) else { throw SlpStoreError.unknownUser }
            guard try await Self.activeMatch(of: to, tx) == nil, try await Self.isQueued(to, tx) else {
                return .otherNotSearching
            }
            if try await Self.requested(by: to, of: from, tx) {
                try await Self.match(from, to, id: matchID, now: now, tx, events: events)
                return .matched(matchID)
            }
            try await tx.query(
                """
                INSERT INTO slp_request (from_id, to_id, created_at_ms) VALUES (\(from), \(to), \(now))
                ON CONFLICT (from_id, to_id) DO UPDATE SET created_at_ms = excluded.created_at_ms
                """)
            if let notifier {
                let nickname = try await tx.query("SELECT nickname FROM app_user WHERE id = \(from)").first?.decode(
                    String?.self)
                try await notifier.notify(
                    userID: to, app: Self.app,
                    NotificationContent(
                        kind: "slp-request", title: "스터디 요청",
                        body: "\(nickname ?? "")님이 함께 공부하자고 요청했어요",
                        data: [(key: "from_id", value: from)]),
                    in: tx)
            }
            return .sent
        }
    }

    func accept(userID: String, other: String, matchID: String, now: Int64) async throws -> SlpAcceptOutcome {
        let events = self.events
        return try await postgres.write { tx in
            let members = try await Self.lockMembers([userID, other], tx)
            guard members.contains(userID) else { throw SlpStoreError.noProfile }
            guard members.contains(other) else { throw SlpStoreError.unknownUser }
            if let active = try await Self.activeMatch(of: userID, tx) { return .alreadyMatched(active) }
            if try await Self.activeMatch(of: other, tx) != nil { return .otherMatched }
            guard try await Self.isQueued(other, tx) else { return .otherNotSearching }
            guard try await Self.requested(by: other, of: userID, tx) else { throw SlpStoreError.noRequest }
            guard try await Self.isQueued(userID, tx) else { throw SlpStoreError.notQueued }
            try await Self.match(userID, other, id: matchID, now: now, tx, events: events)
            return .matched(matchID)
        }
    }

    func endMatch(userID: String, other: String, now: Int64) async throws -> Int? {
        let events = self.events
        return try await postgres.write { tx in
            // `other` is locked too: when it is the partner, their side of the match changes.
            guard try await Self.lockMembers([userID, other], tx).contains(userID) else {
                throw SlpStoreError.noProfile
            }
            guard let active = try await Self.activeMatch(of: userID, tx), active.partnerID == other else { return nil }
            try await Self.end(active.matchID, by: userID, reason: "dodge", now: now, tx, events: events)
            return try await tx.query(
                """
                UPDATE slp_profile SET dodge_count = dodge_count + 1, last_dodge_at_ms = \(now)
                WHERE user_id = \(userID) RETURNING dodge_count
                """
            ).first?.decode(Int.self) ?? 0
        }
    }

    /// The partner is read before the locks (a member row's partner never changes), then both are locked:
    /// the partner's counters are read and written under the lock, so two ratings of one member at once
    /// (of two matches) both count.
    func rate(_ rating: SlpRatingRecord) async throws -> Bool {
        let events = self.events
        return try await postgres.write { tx in
            let partnerID = try await tx.query(
                """
                SELECT partner_id FROM slp_match_member WHERE match_id = \(rating.matchID) AND user_id = \(rating.raterID)
                """
            ).first?.decode(String.self)
            let members = try await Self.lockMembers([rating.raterID] + (partnerID.map { [$0] } ?? []), tx)
            guard members.contains(rating.raterID) else { throw SlpStoreError.noProfile }
            guard let partnerID,
                let active = try await tx.query(
                    """
                    SELECT active FROM slp_match_member WHERE match_id = \(rating.matchID) AND user_id = \(rating.raterID)
                    """
                ).first?.decode(Bool.self)
            else { throw SlpStoreError.notYourMatch }
            guard
                try await tx.query(
                    "SELECT 1 FROM slp_rating WHERE match_id = \(rating.matchID) AND rater_id = \(rating.raterID)"
                ).isEmpty
            else { throw SlpStoreError.alreadyRated }
            try await tx.query(
                """
                INSERT INTO slp_rating (match_id, rater_id, ratee_id, flags, comment, created_at_ms)
                VALUES (\(rating.matchID), \(rating.raterID), \(partnerID),
                    \(SlpRules.encode(rating.flags.map { $0 ? 1 : 0 })), \(rating.comment),
                    \(rating.createdAtMilliseconds))
                """)
            if let text = try await tx.query(
                "SELECT reputation FROM slp_profile WHERE user_id = \(partnerID)"
            ).first?.decode(String.self) {
                var counters = SlpRules.decode(text)
                counters += Array(repeating: 0, count: max(0, SlpRules.ratingFlags - counters.count))
                for (index, flag) in rating.flags.enumerated() where flag && index < counters.count {
                    counters[index] += 1
                }
                try await tx.query(
                    "UPDATE slp_profile SET reputation = \(SlpRules.encode(counters)) WHERE user_id = \(partnerID)")
            }
            guard active else { return false }
            try await Self.end(
                rating.matchID, by: rating.raterID, reason: "rating", now: rating.createdAtMilliseconds, tx,
                events: events)
            return true
        }
    }

    func match(id: String) async throws -> (members: (String, String), active: Bool)? {
        try await postgres.read { connection in
            try await connection.query(
                "SELECT user_a, user_b, ended_at_ms FROM slp_match WHERE id = \(id)", logger: PostgresSlpStore.logger
            ).collect().first.map { row in
                let (first, second, ended) = try row.decode((String, String, Int64?).self)
                return (members: (first, second), active: ended == nil)
            }
        }
    }

    func isPartner(_ other: String, of userID: String) async throws -> Bool {
        try await postgres.read { connection in
            try await !connection.query(
                "SELECT 1 FROM slp_match_member WHERE user_id = \(userID) AND partner_id = \(other) LIMIT 1",
                logger: PostgresSlpStore.logger
            ).collect().isEmpty
        }
    }

    // MARK: Rows

    static func requested(by from: String, of to: String, _ tx: PostgresTransaction) async throws -> Bool {
        try await !tx.query("SELECT 1 FROM slp_request WHERE from_id = \(from) AND to_id = \(to)").isEmpty
    }

    /// Pairs two members (both locked by the caller): the match and its two member rows (the unique index
    /// refuses a second active match of either), both out of the queue, every request of either gone,
    /// and the room's job.
    static func match(
        _ first: String, _ second: String, id: String, now: Int64, _ tx: PostgresTransaction,
        events: PostgresAccountEvents?
    ) async throws {
        try await tx.query(
            "INSERT INTO slp_match (id, user_a, user_b, created_at_ms) VALUES (\(id), \(first), \(second), \(now))")
        try await tx.query(
            """
            INSERT INTO slp_match_member (match_id, user_id, partner_id, active, created_at_ms)
            VALUES (\(id), \(first), \(second), true, \(now)), (\(id), \(second), \(first), true, \(now))
            """)
        try await dequeue([first, second], tx)
        try await events?.matchStarted(matchID: id, members: (first, second), in: tx)
    }

    /// Ends an active match for both members, and closes its room.
    static func end(
        _ matchID: String, by userID: String, reason: String, now: Int64, _ tx: PostgresTransaction,
        events: PostgresAccountEvents?
    ) async throws {
        try await tx.query(
            """
            UPDATE slp_match SET ended_at_ms = \(now), ended_by = \(userID), end_reason = \(reason)
            WHERE id = \(matchID) AND ended_at_ms IS NULL
            """)
        try await tx.query("UPDATE slp_match_member SET active = false WHERE match_id = \(matchID)")
        try await events?.matchEnded(matchID: matchID, in: tx)
    }
}
