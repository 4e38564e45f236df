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
    private let undeliverableHandlers = NIOLockedValueBox<[@Sendable (UndeliverableJob) async -> Void]>([])

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
        try insert(try row(peer: peer, method: method, request: request), in: db)
    }

    /// Writes `row` into `db`'s transaction and wakes the worker once it commits.
    private func insert(_ row: OutboxRow, in db: Database) throws -> String {
        try db.execute(
            sql: """
                INSERT INTO runtime_outbox (id, peer, method, payload, created_at_ms) VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [row.id, row.destination, row.kind, row.payload, row.createdAtMilliseconds]
        )
        let wakeUp = self.wakeUp
        db.afterNextTransaction { _ in wakeUp.signal() }
        return row.id
    }

    // MARK: Rows, for either engine

    /// A job for `peer`'s `method`.
    func row<Request: ProtoMessage, Response: ProtoMessage>(
        peer: String, method: RPCMethod<Request, Response>, request: Request
    ) throws -> OutboxRow {
        try row(destination: peer, kind: method.descriptor.fullName, payload: request)
    }

    /// A job for an in-process destination (a registered `OutboxSender`), named by the message's type.
    func row<Message: ProtoMessage>(destination: String, message: Message) throws -> OutboxRow {
        try row(destination: destination, kind: Message.schema.fullName, payload: message)
    }

    /// One row of `runtime_outbox`: `destination` is a peer service or an in-process sender, `kind` the
    /// method (or message) the payload is for; a new id, and the injected clock's time.
    private func row(destination: String, kind: String, payload: some ProtoMessage) throws -> OutboxRow {
        OutboxRow(
            id: ids.next(), destination: destination, kind: kind, payload: Data(try payload.serializedBytes()),
            createdAtMilliseconds: clock.nowMilliseconds)
    }

    /// The destinations `dropOutsideMessages` looks at: mail, SMS and push, never a peer.
    static let outsideDestinations = OutsideMessageKind.allCases.map(\.destination)

    /// Drops, in `db`'s transaction, the mail, SMS and push jobs not sent yet whose message contains any of
    /// `mentions` (a deleted account's id, numbers, address, device tokens): a push to someone else naming
    /// a deleted member, or a code to their number, must not go out after the account is gone. Jobs to
    /// peers are kept (the deletion's own revocations and purges are among them). Answers how many went.
    @discardableResult
    public func dropOutsideMessages(mentioning mentions: Set<String>, in db: Database) throws -> Int {
        let destinations = Self.outsideDestinations
        var dropped = 0
        for mention in mentions where !mention.isEmpty {
            // Both BLOBs: instr compares bytes, wherever the text sits in the encoded message.
            try db.execute(
                sql: """
                    DELETE FROM runtime_outbox
                    WHERE peer IN (\(destinations.map { _ in "?" }.joined(separator: ", "))) AND instr(payload, ?) > 0
                    """,
                arguments: StatementArguments(destinations) + [Data(mention.utf8)])
            dropped += db.changesCount
        }
        return dropped
    }

    /// Sends the mail jobs of this process through `sender` (a service that mails registers one at start).
    public func register(_ sender: any MailSender) {
        register(MailOutboxSender(deliver: sender.send), for: .mail)
    }

    /// Sends the SMS jobs of this process through `sender`.
    public func register(_ sender: any SmsSender) {
        register(SmsOutboxSender(deliver: sender.send), for: .sms)
    }

    /// Sends the push jobs of this process through `sender`.
    public func register(_ sender: any PushSender) {
        register(PushOutboxSender(deliver: sender.send), for: .push)
    }

    private func register(_ sender: any OutboxSender, for kind: OutsideMessageKind) {
        register(sender, destination: kind.destination)
    }

    /// Delivers the jobs of a service's own in-process `destination` through `sender`: work that must reach
    /// outside after a commit, retried until done (BookingService's payment worker: refunds to confirm with
    /// the gateway, payments to reconcile, webhook events). Not a peer's name, nor mail, sms or push.
    public func register(_ sender: any OutboxSender, destination: String) {
        senders.withLockedValue { $0[destination] = sender }
    }

    /// Adds a job for the in-process `destination` to the transaction `db` belongs to; `sender` gets
    /// `message`'s bytes once the transaction commits.
    @discardableResult
    public func enqueue(in db: Database, destination: String, message: some ProtoMessage) throws -> String {
        try insert(try row(destination: destination, message: message), in: db)
    }

    /// Adds a mail job to the transaction `db` belongs to; it is sent once that transaction commits,
    /// through the registered `MailSender`.
    @discardableResult
    public func enqueue(in db: Database, mail: YediRuntime.MailMessage) throws -> String {
        try insert(try row(destination: OutsideMessageKind.mail.destination, message: mail), in: db)
    }

    /// Adds an SMS job, sent through the registered `SmsSender` once `db`'s transaction commits.
    @discardableResult
    public func enqueue(in db: Database, sms: YediRuntime.SmsMessage) throws -> String {
        try insert(try row(destination: OutsideMessageKind.sms.destination, message: sms), in: db)
    }

    /// Adds a push job, sent through the registered `PushSender` once `db`'s transaction commits.
    @discardableResult
    public func enqueue(in db: Database, push: YediRuntime.PushMessage) throws -> String {
        try insert(try row(destination: OutsideMessageKind.push.destination, message: push), in: db)
    }

    /// Calls `handler` for each job a sender refused for good (`UndeliverableMessage` that drops the job),
    /// after the job was deleted: how the owner of a recipient learns of it (a device registry forgets
    /// a dead push token). Register at start; handlers run on the outbox worker, so keep them short.
    public func onUndeliverable(_ handler: @escaping @Sendable (UndeliverableJob) async -> Void) {
        undeliverableHandlers.withLockedValue { $0.append(handler) }
    }

    func reportUndeliverable(_ job: UndeliverableJob) async {
        for handler in undeliverableHandlers.withLockedValue({ $0 }) { await handler(job) }
    }

    /// The in-process sender for a job's destination; nil for a peer service.
    func sender(for destination: String) -> (any OutboxSender)? {
        senders.withLockedValue { $0[destination] }
    }

    /// The metadata key carrying a job's id to the receiver.
    public static let idempotencyKeyMetadata = "idempotency-key"
}
