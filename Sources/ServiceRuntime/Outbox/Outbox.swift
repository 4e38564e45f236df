import Foundation
import GRDB
import ProtoBridge
import RPCCore

/// Durable calls to peer services: a job is written in the same transaction as the change that needs it,
/// and `OutboxWorker` delivers it after the commit, retrying until the peer accepts it.
///
/// A crash at any point (before delivery, during it, after the peer applied it but before the job was
/// deleted) means the job is delivered again after restart: delivery is at least once. Each job carries
/// its id as the `idempotency-key` metadata, and receivers apply it once with `ReceiptLedger`.
public final class Outbox: Sendable {
    private let ids: any IDGenerator
    private let clock: any WallClock
    let wakeUp: WakeUpSignal

    /// The runner makes the process's one outbox (its worker delivers what this one enqueues); a store test
    /// may make its own to enqueue into a scratch database.
    public init(ids: any IDGenerator, clock: any WallClock) {
        self.ids = ids
        self.clock = clock
        self.wakeUp = WakeUpSignal()
    }

    /// Adds a job to the transaction `db` belongs to; it is delivered once that transaction commits.
    ///
    /// - Returns: the job's id (the idempotency key the peer sees).
    @discardableResult
    public func enqueue<Request: ProtoMessage, Response: ProtoMessage>(
        in db: Database,
        peer: String,
        method: RPCMethod<Request, Response>,
        request: Request
    ) throws -> String {
        let id = ids.next()
        try db.execute(
            sql: """
                INSERT INTO runtime_outbox (id, peer, method, payload, created_at_ms) VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [
                id, peer, method.descriptor.fullName, Data(try request.serializedBytes()), clock.nowMilliseconds,
            ]
        )
        let wakeUp = self.wakeUp
        db.afterNextTransaction { _ in wakeUp.signal() }
        return id
    }

    /// The metadata key carrying a job's id to the receiver.
    public static let idempotencyKeyMetadata = "idempotency-key"
}
