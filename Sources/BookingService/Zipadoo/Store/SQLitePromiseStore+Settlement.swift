import GRDB
import ServiceRuntime

/// Settlement at T + 3 h, exactly once per promise (docs/zipadoo.md, "Settlement"): whoever comes first,
/// the scheduler's job or a read of the due promise, wins the conditional update on `settled_at_ms`; the
/// counters, the potato moves (pairs of ledger entries) and the erased positions commit with it.
extension SQLitePromiseStore {
    func settle(promiseID: String, now: Int64) async throws -> Bool {
        try await database.write { db in try Self.settle(promiseID, now: now, scheduler: scheduler, sink: sink, db) }
    }

    func settleDue(of userID: String, now: Int64) async throws -> Int {
        let due = try await database.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT p.id FROM promise_participant pp JOIN promise p ON p.id = pp.promise_id
                    WHERE pp.user_id = ? AND p.settled_at_ms IS NULL AND p.at_ms <= ?
                    """,
                arguments: [userID, now - PromiseRules.closesAfter])
        }
        guard !due.isEmpty else { return 0 }
        return try await database.write { db in
            try due.reduce(0) { count, id in
                count + (try Self.settle(id, now: now, scheduler: scheduler, sink: sink, db) ? 1 : 0)
            }
        }
    }

    /// Settles `promiseID` in the caller's transaction if it is due at `now` and not settled yet.
    static func settle(
        _ promiseID: String, now: Int64, scheduler: Scheduler, sink: PromiseEventSink?, _ db: Database
    ) throws -> Bool {
        try db.execute(
            sql: "UPDATE promise SET settled_at_ms = ? WHERE id = ? AND settled_at_ms IS NULL AND at_ms <= ?",
            arguments: [now, promiseID, now - PromiseRules.closesAfter])
        guard db.changesCount == 1, let promise = try load(promiseID, db) else { return false }
        // A read settled it first: the job has nothing left to do.
        _ = try scheduler.cancel(id: settlementJobID(promiseID), in: db)

        let plan = SettlementPlan(promise)
        for move in plan.moves {
            try db.execute(
                sql: """
                    INSERT INTO potato_entry (user_id, promise_id, counterparty_id, amount, created_at_ms)
                    VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)
                    """,
                arguments: [
                    move.payer, promiseID, move.payee, -move.amount, now,
                    move.payee, promiseID, move.payer, move.amount, now,
                ])
        }
        for participant in promise.participants {
            let result = plan.outcome[participant.userID] ?? .neverArrived
            try db.execute(
                sql: """
                    UPDATE promise_participant SET result = ?, potatoes = ?, latitude = NULL, longitude = NULL,
                        fixed_at_ms = NULL
                    WHERE promise_id = ? AND user_id = ?
                    """,
                arguments: [result.rawValue, plan.potatoes[participant.userID] ?? 0, promiseID, participant.userID])
            try db.execute(
                sql: """
                    INSERT INTO promise_member_stats (user_id, completed, late) VALUES (?, 1, ?)
                    ON CONFLICT (user_id) DO UPDATE SET completed = completed + 1, late = late + excluded.late
                    """,
                arguments: [participant.userID, result == .onTime ? 0 : 1])
        }
        // The fixes go with the positions; watchers get the end.
        try db.execute(sql: "DELETE FROM promise_event WHERE promise_id = ?", arguments: [promiseID])
        try record(
            .trackingEnded, promiseID: promiseID, at: promise.atMilliseconds + PromiseRules.closesAfter, sink: sink, db)
        return true
    }

    /// A deleted account (BookingService's `PurgeUser`): the promises they created with all their rows
    /// and jobs, their places in promises they joined, their counters; their ledger entries become one
    /// anonymous write-off of the same sum, so all entries still sum to 0, and no entry names them.
    static func purge(_ userID: String, now: Int64, scheduler: Scheduler?, _ db: Database) throws {
        let created = try String.fetchAll(db, sql: "SELECT id FROM promise WHERE creator_id = ?", arguments: [userID])
        for id in created {
            _ = try scheduler?.cancel(subject: id, in: db)
            try db.execute(sql: "DELETE FROM promise WHERE id = ?", arguments: [id])
        }
        try db.execute(sql: "DELETE FROM promise_participant WHERE user_id = ?", arguments: [userID])
        try db.execute(sql: "DELETE FROM promise_event WHERE user_id = ?", arguments: [userID])
        try db.execute(sql: "DELETE FROM promise_member_stats WHERE user_id = ?", arguments: [userID])
        let sum =
            try Int64.fetchOne(
                db, sql: "SELECT COALESCE(SUM(amount), 0) FROM potato_entry WHERE user_id = ?", arguments: [userID])
            ?? 0
        let entries =
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM potato_entry WHERE user_id = ?", arguments: [userID]) ?? 0
        try db.execute(sql: "DELETE FROM potato_entry WHERE user_id = ?", arguments: [userID])
        if entries > 0 {
            try db.execute(
                sql: "INSERT INTO potato_entry (user_id, amount, created_at_ms) VALUES (NULL, ?, ?)",
                arguments: [sum, now])
        }
        try db.execute(
            sql: "UPDATE potato_entry SET counterparty_id = NULL WHERE counterparty_id = ?", arguments: [userID])
    }
}
