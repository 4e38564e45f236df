import Foundation
import Logging
import PostgresNIO
import ServiceRuntime

/// `PromiseStore` on BookingService's PostgreSQL database, for replicas sharing it (docs/postgres.md,
/// "Zipadoo's promises on PostgreSQL"). Settlement is in `PostgresPromiseStore+Settlement`.
///
/// What SQLite's single writer gave, a row lock gives here: every change to a promise (a fix, an edit,
/// its settlement) first locks the promise's row, so two arrivals never compute one rank, and a promise's
/// events get positions in commit order (the identity column only grows, and each insert for a promise
/// happens after the previous one committed). A retried create is told apart by the unique index on
/// (creator, client id), `ON CONFLICT DO NOTHING`.
struct PostgresPromiseStore: PromiseStore {
    let postgres: ServicePostgres
    /// Each promise's settlement and reminder jobs, written, moved and dropped with the promise.
    let scheduler: Scheduler
    /// This replica's live streams (`PromiseEventHub.publish`); nil in store tests.
    var sink: PromiseEventSink? = nil

    static let logger = Logger(label: "yedi.booking.postgres")
    /// The channel every promise event is announced on, and every replica listens to.
    static let channel = "promise_events"

    func create(_ promise: PromiseRecord, participantIDs: [String]) async throws -> PromiseRecord {
        try await postgres.write { [scheduler] tx in
            let inserted = try await tx.query(
                """
                INSERT INTO promise (id, creator_id, client_id, title, at_ms, place_name, place_address, latitude,
                    longitude, fee, created_at_ms)
                VALUES (\(promise.id), \(promise.creatorID), \(promise.clientID), \(promise.title),
                    \(promise.atMilliseconds), \(promise.place.name), \(promise.place.address), \(promise.place.latitude),
                    \(promise.place.longitude), \(promise.fee), \(promise.createdAtMilliseconds))
                ON CONFLICT (creator_id, client_id) DO NOTHING RETURNING id
                """)
            guard !inserted.isEmpty else {
                // A retry (or the same create racing on another replica, which this waited for).
                let existing = try await tx.query(
                    "SELECT id FROM promise WHERE creator_id = \(promise.creatorID) AND client_id = \(promise.clientID)"
                )
                guard let id = try existing.first?.decode(String.self), let stored = try await Self.load(id, tx)
                else { throw PromiseStoreError.notFound }
                return stored
            }
            for (position, userID) in ([promise.creatorID] + participantIDs).enumerated() {
                try await Self.addParticipant(promise.id, userID, position: position, tx)
            }
            try await scheduler.schedule(
                PromiseSettlement.job(promiseID: promise.id, at: promise.atMilliseconds), in: tx)
            try await scheduler.schedule(PromiseReminder.job(promiseID: promise.id, at: promise.atMilliseconds), in: tx)
            return try await Self.load(promise.id, tx)!
        }
    }

    func promise(id: String, for userID: String, now: Int64) async throws -> PromiseRecord {
        let read = try await postgres.snapshot { tx -> PromiseRecord in
            guard try await Self.isParticipant(id, userID, tx), let promise = try await Self.load(id, tx) else {
                throw PromiseStoreError.notFound
            }
            return promise
        }
        // Only a due, unsettled promise needs a write: it is settled first.
        guard read.settledAtMilliseconds == nil, read.atMilliseconds + PromiseRules.closesAfter <= now else {
            return read
        }
        return try await postgres.write { [scheduler, sink] tx in
            guard try await Self.isParticipant(id, userID, tx) else { throw PromiseStoreError.notFound }
            _ = try await Self.settle(id, now: now, scheduler: scheduler, sink: sink, tx)
            return try await Self.load(id, tx)!
        }
    }

    func update(id: String, by userID: String, _ edit: PromiseEdit, now: Int64) async throws -> PromiseRecord {
        try await postgres.write { [scheduler] tx in
            let current = try await Self.changeable(id, by: userID, now: now, tx)
            guard current.creatorID == userID else { throw PromiseStoreError.notCreator }
            try await tx.query(
                """
                UPDATE promise SET title = \(edit.title), at_ms = \(edit.atMilliseconds), place_name = \(edit.place.name),
                    place_address = \(edit.place.address), latitude = \(edit.place.latitude),
                    longitude = \(edit.place.longitude), fee = \(edit.fee)
                WHERE id = \(id)
                """)
            // Staying participants keep their rows; removed ones lose theirs; new ones are added after.
            let staying = Set(edit.participantIDs + [current.creatorID])
            for participant in current.participants where !staying.contains(participant.userID) {
                try await tx.query(
                    "DELETE FROM promise_participant WHERE promise_id = \(id) AND user_id = \(participant.userID)")
            }
            let present = Set(current.participants.map(\.userID))
            var next =
                try await tx.query("SELECT max(position) FROM promise_participant WHERE promise_id = \(id)")
                .first?.decode(Int?.self) ?? 0
            for userID in edit.participantIDs where !present.contains(userID) {
                next += 1
                try await Self.addParticipant(id, userID, position: next, tx)
            }
            _ = try await scheduler.move(
                id: PromiseSettlement.jobID(id), to: edit.atMilliseconds + PromiseRules.closesAfter, in: tx)
            _ = try await scheduler.move(
                id: PromiseReminder.jobID(id), to: edit.atMilliseconds - PromiseRules.opensBefore, in: tx)
            return try await Self.load(id, tx)!
        }
    }

    func delete(id: String, by userID: String, now: Int64) async throws {
        try await postgres.write { [scheduler] tx in
            let current = try await Self.changeable(id, by: userID, now: now, tx)
            guard current.creatorID == userID else { throw PromiseStoreError.notCreator }
            try await tx.query("DELETE FROM promise WHERE id = \(id)")
            _ = try await scheduler.cancel(subject: id, in: tx)
        }
    }

    func leave(id: String, userID: String, now: Int64) async throws {
        try await postgres.write { tx in
            let current = try await Self.changeable(id, by: userID, now: now, tx)
            guard current.creatorID != userID else { throw PromiseStoreError.creatorCannotLeave }
            try await tx.query("DELETE FROM promise_participant WHERE promise_id = \(id) AND user_id = \(userID)")
        }
    }

    func promises(
        of userID: String, window: PromiseWindowFilter, after: (at: Int64, id: String)?, limit: Int, now: Int64
    ) async throws -> [PromiseRecord] {
        if window == .past { _ = try await settleDue(of: userID, now: now) }
        let opens = now + PromiseRules.opensBefore
        let closes = now - PromiseRules.closesAfter
        let query: PostgresQuery
        switch window {
        case .upcoming:
            query = """
                SELECT p.id FROM promise_participant pp JOIN promise p ON p.id = pp.promise_id
                WHERE pp.user_id = \(userID) AND p.at_ms > \(opens) ORDER BY p.at_ms, p.id LIMIT \(limit)
                """
        case .tracking:
            query = """
                SELECT p.id FROM promise_participant pp JOIN promise p ON p.id = pp.promise_id
                WHERE pp.user_id = \(userID) AND p.at_ms <= \(opens) AND p.at_ms > \(closes)
                ORDER BY p.at_ms, p.id LIMIT \(limit)
                """
        case .past:
            query = """
                WITH latest AS (
                    SELECT p.id, p.at_ms FROM promise_participant pp JOIN promise p ON p.id = pp.promise_id
                    WHERE pp.user_id = \(userID) AND p.at_ms <= \(closes) ORDER BY p.at_ms DESC, p.id DESC
                    LIMIT \(PromiseRules.pastKept)
                )
                SELECT id FROM latest
                WHERE \(after?.at)::bigint IS NULL OR (at_ms, id) < (\(after?.at)::bigint, \(after?.id ?? "")::text)
                ORDER BY at_ms DESC, id DESC LIMIT \(limit)
                """
        }
        // One snapshot for the ids and their rows, as one SQLite read gave.
        return try await postgres.snapshot { tx in
            var found: [PromiseRecord] = []
            for row in try await tx.query(query) {
                if let promise = try await Self.load(try row.decode(String.self), tx) { found.append(promise) }
            }
            return found
        }
    }

    func report(promiseID: String, userID: String, at point: GeoPoint, now: Int64) async throws -> FixOutcome {
        try await postgres.write { [sink] tx in
            // The promise's lock first: arrivals rank one at a time, events take positions in commit order.
            guard let promise = try await Self.load(promiseID, tx, locking: true),
                let me = promise.participants.first(where: { $0.userID == userID })
            else { throw PromiseStoreError.notFound }
            guard PromiseRules.window(at: promise.atMilliseconds, now: now) == .tracking else {
                throw PromiseStoreError.outsideWindow
            }
            if let last = me.fixedAtMilliseconds, now - last < PromiseRules.fixInterval {
                throw PromiseStoreError.tooSoon
            }
            let destination = GeoPoint(latitude: promise.place.latitude, longitude: promise.place.longitude)!
            let metres = point.distance(to: destination)
            var arrivedAt = me.arrivedAtMilliseconds
            var rank = me.rank
            if arrivedAt == nil, metres <= PromiseRules.arrivalMetres {
                arrivedAt = now
                rank = promise.participants.filter { $0.rank != nil }.count + 1
            }
            try await tx.query(
                """
                UPDATE promise_participant SET latitude = \(point.latitude), longitude = \(point.longitude),
                    fixed_at_ms = \(now), arrived_at_ms = \(arrivedAt), arrival_rank = \(rank)
                WHERE promise_id = \(promiseID) AND user_id = \(userID)
                """)
            let arrives = me.arrivedAtMilliseconds == nil && arrivedAt != nil
            try await Self.record(
                arrives ? .arrived : .moved, promiseID: promiseID, userID: userID, latitude: point.latitude,
                longitude: point.longitude, at: now, rank: rank, sink: sink, tx)
            return FixOutcome(
                arrivedAtMilliseconds: arrivedAt, rank: rank, fee: promise.fee, atMilliseconds: promise.atMilliseconds,
                metres: metres)
        }
    }

    func positions(promiseID: String, userID: String, now: Int64) async throws -> [ParticipantRecord] {
        try await postgres.snapshot { tx in
            guard let promise = try await Self.load(promiseID, tx),
                promise.participants.contains(where: { $0.userID == userID })
            else { throw PromiseStoreError.notFound }
            guard PromiseRules.window(at: promise.atMilliseconds, now: now) == .tracking else {
                throw PromiseStoreError.outsideWindow
            }
            return promise.participants
        }
    }

    func snapshot(promiseID: String, userID: String, now: Int64) async throws -> ([ParticipantRecord], Int64) {
        try await postgres.snapshot { tx in
            guard let promise = try await Self.load(promiseID, tx),
                promise.participants.contains(where: { $0.userID == userID })
            else { throw PromiseStoreError.notFound }
            guard now >= promise.atMilliseconds - PromiseRules.opensBefore else {
                throw PromiseStoreError.outsideWindow
            }
            let position =
                try await tx.query("SELECT max(position) FROM promise_event WHERE promise_id = \(promiseID)")
                .first?.decode(Int64?.self) ?? 0
            return (promise.participants, position)
        }
    }

    func stats(of userIDs: [String]) async throws -> [MemberStatsRecord] {
        let rows = try await postgres.read { connection in
            try await connection.query(
                "SELECT user_id, completed, late FROM promise_member_stats WHERE user_id = ANY(\(userIDs))",
                logger: Self.logger
            ).collect()
        }
        var found: [String: (Int64, Int64)] = [:]
        for row in rows {
            let (id, completed, late) = try row.decode((String, Int64, Int64).self)
            found[id] = (completed, late)
        }
        return userIDs.map { id in
            MemberStatsRecord(userID: id, completed: found[id]?.0 ?? 0, late: found[id]?.1 ?? 0)
        }
    }

    func balance(of userID: String) async throws -> Int64 {
        try await postgres.read { connection in
            try await connection.query(
                "SELECT COALESCE(sum(amount), 0)::bigint FROM potato_entry WHERE user_id = \(userID)",
                logger: Self.logger
            ).collect().first?.decode(Int64.self) ?? 0
        }
    }

    func results(of userID: String, limit: Int) async throws -> [PromiseResultRecord] {
        try await postgres.read { connection in
            try await connection.query(
                """
                SELECT p.id, p.title, p.at_ms, pp.arrival_rank, pp.result, pp.potatoes
                FROM promise_participant pp JOIN promise p ON p.id = pp.promise_id
                WHERE pp.user_id = \(userID) AND p.settled_at_ms IS NOT NULL
                ORDER BY p.at_ms DESC, p.id DESC LIMIT \(limit)
                """,
                logger: Self.logger
            ).collect().map { row in
                let (id, title, at, rank, result, potatoes) = try row.decode(
                    (String, String, Int64, Int?, Int, Int64).self)
                return PromiseResultRecord(
                    promiseID: id, title: title, atMilliseconds: at, rank: rank,
                    result: ArrivalOutcome(rawValue: result) ?? .unsettled, potatoes: potatoes)
            }
        }
    }
}
