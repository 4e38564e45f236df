/// One job as `OutboxWorker` delivers it, taken from either engine's `runtime_outbox`.
struct OutboxJob: Sendable {
    var id: String
    /// The peer service, or in-process destination, it goes to.
    var peer: String
    /// The method (`package.Service/Method`), or the message's full name.
    var method: String
    var payload: [UInt8]
    /// Failed attempts so far.
    var attempts: Int
}

/// What one look at the queue gave the worker.
struct OutboxBatch: Sendable {
    /// Oldest first.
    var jobs: [OutboxJob]
    /// More jobs may be due already (PostgreSQL claims a limited number at a time): look again at once.
    var more: Bool
}
