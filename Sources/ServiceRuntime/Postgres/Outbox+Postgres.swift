import Foundation
import PostgresNIO
import ProtoBridge
import RPCCore
import YediProto

/// The outbox inside a PostgreSQL transaction: the same jobs as the GRDB `enqueue(in:)` methods make
/// (`Outbox.row`: id, clock, payload), written into `runtime_outbox`, due at once on PostgreSQL's clock
/// (the column's default). The process's worker wakes after the commit; other replicas' workers find
/// the job at their next poll (docs/postgres.md, "The outbox on PostgreSQL").
extension Outbox {
    /// Adds a job to `tx`; it is delivered once `tx` commits.
    ///
    /// - Returns: the job's id (the idempotency key the peer sees).
    @discardableResult
    public func enqueue<Request: ProtoMessage, Response: ProtoMessage>(
        in tx: PostgresTransaction,
        peer: String,
        method: RPCMethod<Request, Response>,
        request: Request
    ) async throws -> String {
        try await insert(try row(peer: peer, method: method, request: request), in: tx)
    }

    /// Adds a job for the in-process `destination` to `tx`; its sender gets `message`'s bytes once `tx`
    /// commits.
    @discardableResult
    public func enqueue(in tx: PostgresTransaction, destination: String, message: some ProtoMessage) async throws
        -> String
    {
        try await insert(try row(destination: destination, message: message), in: tx)
    }

    /// Adds a mail job to `tx`, sent through the registered `MailSender` once `tx` commits.
    @discardableResult
    public func enqueue(in tx: PostgresTransaction, mail: YediRuntime.MailMessage) async throws -> String {
        try await insert(try row(destination: OutsideMessageKind.mail.destination, message: mail), in: tx)
    }

    /// Adds an SMS job to `tx`, sent through the registered `SmsSender` once `tx` commits.
    @discardableResult
    public func enqueue(in tx: PostgresTransaction, sms: YediRuntime.SmsMessage) async throws -> String {
        try await insert(try row(destination: OutsideMessageKind.sms.destination, message: sms), in: tx)
    }

    /// Adds a push job to `tx`, sent through the registered `PushSender` once `tx` commits.
    @discardableResult
    public func enqueue(in tx: PostgresTransaction, push: YediRuntime.PushMessage) async throws -> String {
        try await insert(try row(destination: OutsideMessageKind.push.destination, message: push), in: tx)
    }

    /// `dropOutsideMessages(mentioning:in:)` inside `tx`: the mail, SMS and push jobs not sent yet whose
    /// message contains any of `mentions`, wherever it sits in the encoded bytes. Jobs to peers are kept.
    /// A job a worker is delivering at this moment may still go out (as on SQLite, the worker checks the
    /// row right before each delivery). Answers how many went.
    @discardableResult
    public func dropOutsideMessages(mentioning mentions: Set<String>, in tx: PostgresTransaction) async throws -> Int {
        var dropped = 0
        for mention in mentions.sorted() where !mention.isEmpty {
            let bytes = Data(mention.utf8)
            let rows = try await tx.query(
                """
                DELETE FROM runtime_outbox
                WHERE peer = ANY(\(Self.outsideDestinations)) AND position(\(bytes)::bytea in payload) > 0
                RETURNING id
                """)
            dropped += rows.count
        }
        return dropped
    }

    /// Writes `row` into `tx` and wakes this process's worker once `tx` commits.
    private func insert(_ row: OutboxRow, in tx: PostgresTransaction) async throws -> String {
        try await tx.query(
            """
            INSERT INTO runtime_outbox (id, peer, method, payload, created_at_ms)
            VALUES (\(row.id), \(row.destination), \(row.kind), \(row.payload), \(row.createdAtMilliseconds))
            """)
        let wakeUp = self.wakeUp
        tx.afterCommit { wakeUp.signal() }
        return row.id
    }
}
