import GRDB

/// The receiving side of the outbox: remembers which delivered jobs were applied, so a job delivered
/// twice (after a crash, a lost answer or a retry) changes things once.
public enum ReceiptLedger {
    /// Call inside the write transaction that applies the delivery. Returns true the first time this
    /// delivery's key is seen (apply it), false for a repeat (answer OK without applying again).
    /// Deliveries without a key (not from an outbox) are always applied.
    public static func isFirstDelivery(in db: Database, _ delivery: Delivery, nowMilliseconds: Int64) throws -> Bool {
        guard let key = delivery.key else { return true }
        try db.execute(
            sql: "INSERT OR IGNORE INTO runtime_receipt (key, method, applied_at_ms) VALUES (?, ?, ?)",
            arguments: [key, delivery.method, nowMilliseconds]
        )
        return db.changesCount > 0
    }
}
