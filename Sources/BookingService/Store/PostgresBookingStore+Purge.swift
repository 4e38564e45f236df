import PostgresNIO
import ServiceRuntime

/// Account deletion on PostgreSQL: the effect and its receipt in one transaction.
extension PostgresBookingStore {
    /// The receipt first (`ReceiptLedger`'s one-statement `ON CONFLICT DO NOTHING`): two replicas given the
    /// same delivery at once apply it once, the second waiting for the first's commit, then answering false.
    func purgeUser(_ userID: String, delivery: Delivery, now: Int64) async throws -> Bool {
        try await postgres.write { [outbox, scheduler] tx in
            guard try await ReceiptLedger.isFirstDelivery(in: tx, delivery, nowMilliseconds: now) else {
                return false
            }
            if let outbox { try await PostgresPaymentStore.purge(userID, now: now, tx, outbox: outbox) }
            // booked_cell rows go with their reservations (ON DELETE CASCADE), closed days with the schedule.
            try await tx.query("DELETE FROM reservation WHERE customer_id = \(userID) OR designer_id = \(userID)")
            try await tx.query("DELETE FROM style WHERE designer_id = \(userID)")
            try await tx.query("DELETE FROM schedule WHERE designer_id = \(userID)")
            try await Self.purgePromises(of: userID, now: now, scheduler: scheduler, tx)
            return true
        }
    }

    /// Zipadoo, as `SQLitePromiseStore.purge` does it: the promises they created (with their participants
    /// and events), their places in others, their counters, and their potato ledger as one anonymous
    /// write-off keeping the ledger's sum; the created promises' settlement and reminder jobs go too.
    static func purgePromises(of userID: String, now: Int64, scheduler: Scheduler?, _ tx: PostgresTransaction)
        async throws
    {
        let created = try await tx.query("DELETE FROM promise WHERE creator_id = \(userID) RETURNING id")
        for row in created { _ = try await scheduler?.cancel(subject: try row.decode(String.self), in: tx) }
        try await tx.query("DELETE FROM promise_participant WHERE user_id = \(userID)")
        try await tx.query("DELETE FROM promise_event WHERE user_id = \(userID)")
        try await tx.query("DELETE FROM promise_member_stats WHERE user_id = \(userID)")
        try await tx.query(
            """
            WITH gone AS (DELETE FROM potato_entry WHERE user_id = \(userID) RETURNING amount)
            INSERT INTO potato_entry (user_id, amount, created_at_ms)
            SELECT NULL, sum(amount), \(now) FROM gone HAVING count(*) > 0
            """)
        try await tx.query("UPDATE potato_entry SET counterparty_id = NULL WHERE counterparty_id = \(userID)")
    }
}
