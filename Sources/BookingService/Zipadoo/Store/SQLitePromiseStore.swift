import Foundation
import GRDB
import ServiceRuntime

/// `PromiseStore` on BookingService's SQLite database. Settlement is in `SQLitePromiseStore+Settlement`.
struct SQLitePromiseStore: PromiseStore {
    let database: ServiceDatabase
    /// Each promise's settlement job (`settlementKind`), written, moved and dropped with the promise.
    let scheduler: Scheduler
    /// The live streams' hub (`PromiseEventHub.publish`); nil in store tests.
    var sink: PromiseEventSink? = nil

    static let settlementKind = PromiseSettlement.kind
    static func settlementJobID(_ promiseID: String) -> String { PromiseSettlement.jobID(promiseID) }

    func create(_ promise: PromiseRecord, participantIDs: [String]) async throws -> PromiseRecord {
        try await database.write { db in
            if let existing = try String.fetchOne(
                db, sql: "SELECT id FROM promise WHERE creator_id = ? AND client_id = ?",
                arguments: [promise.creatorID, promise.clientID])
            {
                return try Self.load(existing, db)!
            }
            try db.execute(
                sql: """
                    INSERT INTO promise (id, creator_id, client_id, title, at_ms, place_name, place_address, latitude,
                        longitude, fee, created_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    promise.id, promise.creatorID, promise.clientID, promise.title, promise.atMilliseconds,
                    promise.place.name, promise.place.address, promise.place.latitude, promise.place.longitude,
                    promise.fee, promise.createdAtMilliseconds,
                ])
            for (position, userID) in ([promise.creatorID] + participantIDs).enumerated() {
                try Self.addParticipant(promise.id, userID, position: position, db)
            }
            _ = try scheduler.schedule(PromiseSettlement.job(promiseID: promise.id, at: promise.atMilliseconds), in: db)
            _ = try scheduler.schedule(PromiseReminder.job(promiseID: promise.id, at: promise.atMilliseconds), in: db)
            return try Self.load(promise.id, db)!
        }
    }

    func promise(id: String, for userID: String, now: Int64) async throws -> PromiseRecord {
        let read = try await database.read { db -> PromiseRecord in
            guard try Self.isParticipant(id, userID, db), let promise = try Self.load(id, db) else {
                throw PromiseStoreError.notFound
            }
            return promise
        }
        // Only a due, unsettled promise needs the writer: it is settled first.
        guard read.settledAtMilliseconds == nil, read.atMilliseconds + PromiseRules.closesAfter <= now else {
            return read
        }
        return try await database.write { db in
            guard try Self.isParticipant(id, userID, db) else { throw PromiseStoreError.notFound }
            _ = try Self.settle(id, now: now, scheduler: scheduler, sink: sink, db)
            return try Self.load(id, db)!
        }
    }

    func update(id: String, by userID: String, _ edit: PromiseEdit, now: Int64) async throws -> PromiseRecord {
        try await database.write { db in
            let current = try Self.changeable(id, by: userID, now: now, db)
            guard current.creatorID == userID else { throw PromiseStoreError.notCreator }
            try db.execute(
                sql: """
                    UPDATE promise SET title = ?, at_ms = ?, place_name = ?, place_address = ?, latitude = ?,
                        longitude = ?, fee = ?
                    WHERE id = ?
                    """,
                arguments: [
                    edit.title, edit.atMilliseconds, edit.place.name, edit.place.address, edit.place.latitude,
                    edit.place.longitude, edit.fee, id,
                ])
            // Staying participants keep their rows; removed ones lose theirs; new ones are added after.
            let staying = Set(edit.participantIDs + [current.creatorID])
            for participant in current.participants where !staying.contains(participant.userID) {
                try db.execute(
                    sql: "DELETE FROM promise_participant WHERE promise_id = ? AND user_id = ?",
                    arguments: [id, participant.userID])
            }
            let present = Set(current.participants.map(\.userID))
            var next =
                try Int.fetchOne(
                    db, sql: "SELECT MAX(position) FROM promise_participant WHERE promise_id = ?", arguments: [id]) ?? 0
            for userID in edit.participantIDs where !present.contains(userID) {
                next += 1
                try Self.addParticipant(id, userID, position: next, db)
            }
            _ = try scheduler.move(
                id: Self.settlementJobID(id), to: edit.atMilliseconds + PromiseRules.closesAfter, in: db)
            _ = try scheduler.move(
                id: PromiseReminder.jobID(id), to: edit.atMilliseconds - PromiseRules.opensBefore, in: db)
            return try Self.load(id, db)!
        }
    }

    func delete(id: String, by userID: String, now: Int64) async throws {
        try await database.write { db in
            let current = try Self.changeable(id, by: userID, now: now, db)
            guard current.creatorID == userID else { throw PromiseStoreError.notCreator }
            try db.execute(sql: "DELETE FROM promise WHERE id = ?", arguments: [id])
            _ = try scheduler.cancel(subject: id, in: db)
        }
    }

    func leave(id: String, userID: String, now: Int64) async throws {
        try await database.write { db in
            let current = try Self.changeable(id, by: userID, now: now, db)
            guard current.creatorID != userID else { throw PromiseStoreError.creatorCannotLeave }
            try db.execute(
                sql: "DELETE FROM promise_participant WHERE promise_id = ? AND user_id = ?", arguments: [id, userID])
        }
    }

    func promises(
        of userID: String, window: PromiseWindowFilter, after: (at: Int64, id: String)?, limit: Int, now: Int64
    ) async throws -> [PromiseRecord] {
        if window == .past { _ = try await settleDue(of: userID, now: now) }
        return try await database.read { db in
            let opens = now + PromiseRules.opensBefore
            let closes = now - PromiseRules.closesAfter
            let ids: [String]
            switch window {
            case .upcoming:
                ids = try String.fetchAll(
                    db,
                    sql: """
                        SELECT p.id FROM promise_participant pp JOIN promise p ON p.id = pp.promise_id
                        WHERE pp.user_id = ? AND p.at_ms > ? ORDER BY p.at_ms, p.id LIMIT ?
                        """,
                    arguments: [userID, opens, limit])
            case .tracking:
                ids = try String.fetchAll(
                    db,
                    sql: """
                        SELECT p.id FROM promise_participant pp JOIN promise p ON p.id = pp.promise_id
                        WHERE pp.user_id = ? AND p.at_ms <= ? AND p.at_ms > ? ORDER BY p.at_ms, p.id LIMIT ?
                        """,
                    arguments: [userID, opens, closes, limit])
            case .past:
                ids = try String.fetchAll(
                    db,
                    sql: """
                        WITH latest AS (
                            SELECT p.id, p.at_ms FROM promise_participant pp JOIN promise p ON p.id = pp.promise_id
                            WHERE pp.user_id = ?1 AND p.at_ms <= ?2 ORDER BY p.at_ms DESC, p.id DESC LIMIT ?3
                        )
                        SELECT id FROM latest WHERE ?4 IS NULL OR (at_ms, id) < (?4, ?5)
                        ORDER BY at_ms DESC, id DESC LIMIT ?6
                        """,
                    arguments: [userID, closes, PromiseRules.pastKept, after?.at, after?.id ?? "", limit])
            }
            return try ids.map { try Self.load($0, db)! }
        }
    }

    func report(promiseID: String, userID: String, at point: GeoPoint, now: Int64) async throws -> FixOutcome {
        try await database.write { db in
            guard let promise = try Self.load(promiseID, db),
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
                let arrived =
                    try Int.fetchOne(
                        db,
                        sql:
                            "SELECT COUNT(*) FROM promise_participant WHERE promise_id = ? AND arrival_rank IS NOT NULL",
                        arguments: [promiseID]) ?? 0
                arrivedAt = now
                rank = arrived + 1
            }
            try db.execute(
                sql: """
                    UPDATE promise_participant SET latitude = ?, longitude = ?, fixed_at_ms = ?, arrived_at_ms = ?,
                        arrival_rank = ?
                    WHERE promise_id = ? AND user_id = ?
                    """,
                arguments: [point.latitude, point.longitude, now, arrivedAt, rank, promiseID, userID])
            let arrives = me.arrivedAtMilliseconds == nil && arrivedAt != nil
            try Self.record(
                arrives ? .arrived : .moved, promiseID: promiseID, userID: userID, latitude: point.latitude,
                longitude: point.longitude, at: now, rank: rank, sink: sink, db)
            return FixOutcome(
                arrivedAtMilliseconds: arrivedAt, rank: rank, fee: promise.fee, atMilliseconds: promise.atMilliseconds,
                metres: metres)
        }
    }

    func positions(promiseID: String, userID: String, now: Int64) async throws -> [ParticipantRecord] {
        try await database.read { db in
            guard let promise = try Self.load(promiseID, db),
                promise.participants.contains(where: { $0.userID == userID })
            else { throw PromiseStoreError.notFound }
            guard PromiseRules.window(at: promise.atMilliseconds, now: now) == .tracking else {
                throw PromiseStoreError.outsideWindow
            }
            return promise.participants
        }
    }

    func stats(of userIDs: [String]) async throws -> [MemberStatsRecord] {
        try await database.read { db in
            try userIDs.map { id in
                let row = try Row.fetchOne(
                    db, sql: "SELECT completed, late FROM promise_member_stats WHERE user_id = ?", arguments: [id])
                return MemberStatsRecord(userID: id, completed: row?["completed"] ?? 0, late: row?["late"] ?? 0)
            }
        }
    }

    func balance(of userID: String) async throws -> Int64 {
        try await database.read { db in
            try Int64.fetchOne(
                db, sql: "SELECT COALESCE(SUM(amount), 0) FROM potato_entry WHERE user_id = ?", arguments: [userID])
                ?? 0
        }
    }

    func results(of userID: String, limit: Int) async throws -> [PromiseResultRecord] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT p.id, p.title, p.at_ms, pp.arrival_rank, pp.result, pp.potatoes
                    FROM promise_participant pp JOIN promise p ON p.id = pp.promise_id
                    WHERE pp.user_id = ? AND p.settled_at_ms IS NOT NULL
                    ORDER BY p.at_ms DESC, p.id DESC LIMIT ?
                    """,
                arguments: [userID, limit]
            ).map { row in
                PromiseResultRecord(
                    promiseID: row["id"], title: row["title"], atMilliseconds: row["at_ms"], rank: row["arrival_rank"],
                    result: ArrivalOutcome(rawValue: row["result"]) ?? .unsettled, potatoes: row["potatoes"])
            }
        }
    }

    // MARK: Rows

    static func addParticipant(_ promiseID: String, _ userID: String, position: Int, _ db: Database) throws {
        try db.execute(
            sql: "INSERT INTO promise_participant (promise_id, user_id, position) VALUES (?, ?, ?)",
            arguments: [promiseID, userID, position])
    }

    static func isParticipant(_ promiseID: String, _ userID: String, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db, sql: "SELECT 1 FROM promise_participant WHERE promise_id = ? AND user_id = ?",
            arguments: [promiseID, userID]) == true
    }

    /// The promise `userID` takes part in, while it may still change (before T − 30 min).
    static func changeable(_ id: String, by userID: String, now: Int64, _ db: Database) throws -> PromiseRecord {
        guard try isParticipant(id, userID, db), let promise = try load(id, db) else {
            throw PromiseStoreError.notFound
        }
        guard now < promise.atMilliseconds - PromiseRules.opensBefore else { throw PromiseStoreError.tooLateToChange }
        return promise
    }

    static func load(_ id: String, _ db: Database) throws -> PromiseRecord? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM promise WHERE id = ?", arguments: [id]) else {
            return nil
        }
        var promise = PromiseRecord(
            id: row["id"], creatorID: row["creator_id"], clientID: row["client_id"], title: row["title"],
            atMilliseconds: row["at_ms"],
            place: PlaceRecord(
                name: row["place_name"], address: row["place_address"], latitude: row["latitude"],
                longitude: row["longitude"]),
            fee: row["fee"], createdAtMilliseconds: row["created_at_ms"], settledAtMilliseconds: row["settled_at_ms"])
        promise.participants = try Row.fetchAll(
            db, sql: "SELECT * FROM promise_participant WHERE promise_id = ? ORDER BY position", arguments: [id]
        ).map { row in
            ParticipantRecord(
                userID: row["user_id"], latitude: row["latitude"], longitude: row["longitude"],
                fixedAtMilliseconds: row["fixed_at_ms"], arrivedAtMilliseconds: row["arrived_at_ms"],
                rank: row["arrival_rank"], result: ArrivalOutcome(rawValue: row["result"]) ?? .unsettled,
                potatoes: row["potatoes"])
        }
        return promise
    }
}
