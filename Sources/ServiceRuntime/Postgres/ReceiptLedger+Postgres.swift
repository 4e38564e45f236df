import PostgresNIO

extension ReceiptLedger {
    /// `isFirstDelivery(in:)` inside a PostgreSQL transaction: one statement, so two replicas of the
    /// receiver given the same job at once apply it once (the second waits for the first's commit on the
    /// key, then finds it taken).
    public static func isFirstDelivery(
        in tx: PostgresTransaction, _ delivery: Delivery, nowMilliseconds: Int64
    ) async throws -> Bool {
        guard let key = delivery.key else { return true }
        let rows = try await tx.query(
            """
            INSERT INTO runtime_receipt (key, method, applied_at_ms) VALUES (\(key), \(delivery.method), \(nowMilliseconds))
            ON CONFLICT (key) DO NOTHING RETURNING key
            """)
        return !rows.isEmpty
    }
}
