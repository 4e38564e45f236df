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

        let lateFrom = promise.atMilliseconds + PromiseRules.lateAfter
        var outcome: [String: ArrivalOutcome] = [:]
        var onTime: [ParticipantRecord] = []
        var late: [ParticipantRecord] = []
        for participant in promise.participants {
            if let arrived = participant.arrivedAtMilliseconds, arrived < lateFrom {
                outcome[participant.userID] = .onTime
                onTime.append(participant)
            } else {
                outcome[participant.userID] = participant.arrivedAtMilliseconds == nil ? .neverArrived : .late
                late.append(participant)
            }
        }
        onTime.sort { ($0.rank ?? Int.max) < ($1.rank ?? Int.max) }
        var potatoes: [String: Int64] = [:]
        // Each latecomer's fee is split evenly among those on time in whole potatoes, the remainder one
        // each in rank order; nobody on time: nothing moves.
        if !onTime.isEmpty, promise.fee > 0 {
            let share = promise.fee / onTime.count
            let remainder = promise.fee % onTime.count
            for payer in late {
                for (index, payee) in onTime.enumerated() {
                    let amount = Int64(share + (index < remainder ? 1 : 0))
                    guard amount > 0 else { continue }
                    try await tx.query(
                        """
                        INSERT INTO potato_entry (user_id, promise_id, counterparty_id, amount, created_at_ms)
                        VALUES (\(payer.userID), \(promiseID), \(payee.userID), \(-amount), \(now)),
                            (\(payee.userID), \(promiseID), \(payer.userID), \(amount), \(now))
                        """)
                    potatoes[payer.userID, default: 0] -= amount
                    potatoes[payee.userID, default: 0] += amount
                }
            }
        }
        for participant in promise.participants {
            let result = outcome[participant.userID] ?? .neverArrived
            try await tx.query(
                """
                UPDATE promise_participant SET result = \(result.rawValue), potatoes = \(potatoes[participant.userID] ?? 0),
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
