/// A destination of outbox jobs inside the process: an outside provider (mail now; SMS and push with
/// the platform issue) rather than a peer service.
///
/// Why through the outbox: a message is written in the same transaction as the change that needs it, so
/// it survives a crash, is retried with backoff until the provider takes it, and belongs to exactly one
/// job. Handlers never call a sender directly.
public protocol OutboxSender: Sendable {
    /// Sends one job's message (`payload`, the job's serialized proto). `jobID` is the same on every
    /// retry of the job: a sender passes it on as the provider's idempotency key (or names its file by
    /// it), so a retry is never a second message. Throwing leaves the job to be retried.
    func send(payload: [UInt8], jobID: String) async throws
}
