import Foundation
import GRDB
import NIOConcurrencyHelpers
import ProtoBridge
import RPCCore
import YediProto

/// Durable calls to peer services and outside senders: a job is written in the same transaction as the
/// change that needs it, and `OutboxWorker` delivers it after the commit, retrying until the peer (or
/// the sender) accepts it.
///
/// A crash at any point (before delivery, during it, after the peer applied it but before the job was
/// deleted) means the job is delivered again after restart: delivery is at least once. Each job carries
/// its id as the `idempotency-key` metadata, and receivers apply it once with `ReceiptLedger`.
public final class Outbox: Sendable {
    private let ids: any IDGenerator
    private let clock: any WallClock
    let wakeUp: WakeUpSignal
    private let senders = NIOLockedValueBox<[String: any OutboxSender]>([:])

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
        try enqueue(in: db, destination: peer, kind: method.descriptor.fullName, payload: request)
    }

    /// One row of `runtime_outbox`: `destination` is a peer service or an in-process sender, `kind` the
    /// method (or message) the payload is for.
    private func enqueue(in db: Database, destination: String, kind: String, payload: some ProtoMessage) throws
        -> String
    {
        let id = ids.next()
        try db.execute(
            sql: """
                INSERT INTO runtime_outbox (id, peer, method, payload, created_at_ms) VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [id, destination, kind, Data(try payload.serializedBytes()), clock.nowMilliseconds]
        )
        let wakeUp = self.wakeUp
        db.afterNextTransaction { _ in wakeUp.signal() }
        return id
    }

    /// Sends the mail jobs of this process through `sender` (a service that mails registers one at start).
    public func register(_ sender: any MailSender) {
        senders.withLockedValue { $0[MailOutboxSender.destination] = MailOutboxSender(mail: sender) }
    }

    /// Adds a mail job to the transaction `db` belongs to; it is sent once that transaction commits,
    /// through the registered `MailSender`.
    @discardableResult
    public func enqueue(in db: Database, mail: YediRuntime.MailMessage) throws -> String {
        try enqueue(in: db, destination: MailOutboxSender.destination, kind: MailMessage.schema.fullName, payload: mail)
    }

    /// The in-process sender for a job's destination; nil for a peer service.
    func sender(for destination: String) -> (any OutboxSender)? {
        senders.withLockedValue { $0[destination] }
    }

    private typealias MailMessage = YediRuntime.MailMessage

    /// The metadata key carrying a job's id to the receiver.
    public static let idempotencyKeyMetadata = "idempotency-key"
}
