import GRDB
import RPCCore

/// The receiving side of the outbox: remembers which delivered jobs were applied, so a job delivered
/// twice (after a crash, a lost answer or a retry) changes things once.
public enum ReceiptLedger {
    /// Call inside the write transaction that applies the request. Returns true the first time this
    /// delivery's key is seen (apply it), false for a repeat (answer OK without applying again).
    ///
    /// Requests without an `idempotency-key` (not from an outbox) are always applied.
    public static func isFirstDelivery(in db: Database, context: ServerContext, nowMilliseconds: Int64) throws -> Bool {
        guard let jobID = context.metadata[Outbox.idempotencyKeyMetadata] else { return true }
        let sender: String
        switch context.caller {
        case .service(let name): sender = name
        case .user(let user): sender = "user:\(user.id)"
        case .anonymous: sender = "anonymous"
        }
        try db.execute(
            sql: "INSERT OR IGNORE INTO runtime_receipt (key, method, applied_at_ms) VALUES (?, ?, ?)",
            arguments: ["\(sender)/\(jobID)", context.method.fullName, nowMilliseconds]
        )
        return db.changesCount > 0
    }
}
