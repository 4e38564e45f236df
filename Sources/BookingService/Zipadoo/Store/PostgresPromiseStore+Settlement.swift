import PostgresNIO
import ServiceRuntime

/// Settlement at T + 3 h, exactly once per promise, as on SQLite (docs/zipadoo.md, "Settlement"): the
/// conditional update on `settled_at_ms` decides (and locks the row: a second settler waits, then finds it
/// settled); the counters, the potato moves and the erased positions commit with it.
extension PostgresPromiseStore {
    func settle(promiseID: String, now: Int64) async throws -> Bool {
        try await postgres.write { [scheduler, sink] tx in
            try await Self.settle(promiseID, now: now, scheduler: scheduler, sink: sink, tx)
        }
    }

    func settleDue(of userID: String, now: Int64) async throws -> Int {
        let due = try await postgres.read { connection in
            try await connection.query(
                """
                SELECT p.id FROM promise_participant pp JOIN promise p ON p.id = pp.promise_id
                WHERE pp.user_id = \(userID) AND p.settled_at_ms IS NULL AND p.at_ms <= \(now - PromiseRules.closesAfter)
                ORDER BY p.id
                """,
                logger: Self.logger
            ).collect().map { try $0.decode(String.self) }
        }
        guard !due.isEmpty else { return 0 }
        return try await postgres.write { [scheduler, sink] tx in
            var count = 0
            for id in due where try await Self.settle(id, now: now, scheduler: scheduler, sink: sink, tx) { count += 1 }
            return count
        }
    }

    /// Settles `promiseID` in the caller's transaction if it is due at `now` and not settled yet.
    static func settle(
        _ promiseID: String, now: Int64, scheduler: Scheduler, sink: PromiseEventSink?, _ tx: PostgresTransaction
    ) async throws -> Bool {
        let won = try await tx.query(
            """
            UPDATE promise SET settled_at_ms = \(now)
            WHERE id = \(promiseID) AND settled_at_ms IS NULL AND at_ms <= \(now - PromiseRules.closesAfter)
            RETURNING id
            """)
        guard !won.isEmpty, let promise = try await load(promiseID, tx) else { return false }
        // A read settled it first: the job has nothing left to do.
        _ = try await scheduler.cancel(id: PromiseSettlement.jobID(promiseID), in: tx)

        let plan = SettlementPlan(promise)
        for move in plan.moves {
            try await tx.query(
                """
                INSERT INTO potato_entry (user_id, promise_id, counterparty_id, amount, created_at_ms)
                VALUES (\(move.payer), \(promiseID), \(move.payee), \(-move.amount), \(now)),
                    (\(move.payee), \(promiseID), \(move.payer), \(move.amount), \(now))
                """)
        }
        for participant in promise.participants {
            let result = plan.outcome[participant.userID] ?? .neverArrived
            try await tx.query(
                """
                UPDATE promise_participant SET result = \(result.rawValue), potatoes = \(plan.potatoes[participant.userID] ?? 0),
                    latitude = NULL, longitude = NULL, fixed_at_ms = NULL
                WHERE promise_id = \(promiseID) AND user_id = \(participant.userID)
                """)
            try await tx.query(
                """
                INSERT INTO promise_member_stats (user_id, completed, late) VALUES (\(participant.userID), 1, \(result == .onTime ? 0 : 1))
                ON CONFLICT (user_id) DO UPDATE SET completed = promise_member_stats.completed + 1,
                    late = promise_member_stats.late + excluded.late
                """)
        }
        // The fixes go with the positions; watchers get the end.
        try await tx.query("DELETE FROM promise_event WHERE promise_id = \(promiseID)")
        try await record(
            .trackingEnded, promiseID: promiseID, at: promise.atMilliseconds + PromiseRules.closesAfter, sink: sink, tx)
        return true
    }
}
