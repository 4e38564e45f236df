import PostgresNIO
import ServiceRuntime

/// Where the PostgreSQL account store puts its outbox jobs: inside the transaction of the change, as
/// `Outbox.enqueue(in: Database, …)` does on SQLite. A seam of the store's own until ServiceRuntime's
/// `Outbox` enqueues inside a `PostgresTransaction` itself (issue 31, "The outbox and receipts on both
/// engines"); then the outbox conforms and `RuntimeOutboxRows` goes.
protocol PostgresJobQueue: Sendable {
    /// Adds one job (`destination` a peer or an in-process sender, `kind` the method or message) to `tx`.
    func enqueue(in tx: PostgresTransaction, destination: String, kind: String, payload: [UInt8]) async throws
    /// Drops the mail, SMS and push jobs not sent yet whose payload contains any of `mentions`.
    func dropOutsideMessages(mentioning mentions: Set<String>, in tx: PostgresTransaction) async throws
}

/// `runtime_outbox` rows with the columns `RuntimePostgresSchema` gives them (`id`, `peer`, `method`,
/// `payload`, `created_at_ms`; `seq` and the due time are the table's defaults), as the SQLite outbox
/// writes them.
struct RuntimeOutboxRows: PostgresJobQueue {
    let ids: any IDGenerator
    let clock: any WallClock
    /// Runs once a transaction that enqueued has committed (the local worker's wake-up).
    let committed: @Sendable () -> Void

    func enqueue(in tx: PostgresTransaction, destination: String, kind: String, payload: [UInt8]) async throws {
        try await tx.query(
            """
            INSERT INTO runtime_outbox (id, peer, method, payload, created_at_ms)
            VALUES (\(ids.next()), \(destination), \(kind), \(ByteBuffer(bytes: payload)), \(clock.nowMilliseconds))
            """)
        tx.afterCommit(committed)
    }

    func dropOutsideMessages(mentioning mentions: Set<String>, in tx: PostgresTransaction) async throws {
        let destinations = OutsideMessageKind.allCases.map(\.destination)
        for mention in mentions where !mention.isEmpty {
            // Bytes against bytes, wherever the text sits in the encoded message (SQLite's instr on BLOBs).
            try await tx.query(
                """
                DELETE FROM runtime_outbox
                WHERE peer = ANY(\(destinations)) AND position(\(ByteBuffer(string: mention)) IN payload) > 0
                """)
        }
    }
}
