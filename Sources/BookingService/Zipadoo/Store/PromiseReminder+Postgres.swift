import PostgresNIO
import ServiceRuntime
import YediProto

extension PromiseReminder {
    /// `run(_:outbox:_:)` on PostgreSQL, inside the scheduler's transaction: the same checks, the same
    /// notifications through the outbox.
    @discardableResult
    static func run(_ job: ScheduledJob, outbox: Outbox, _ tx: PostgresTransaction) async throws -> Int {
        guard let id = job.subject, let promise = try await PostgresPromiseStore.load(id, tx),
            promise.atMilliseconds - PromiseRules.opensBefore == job.dueAtMilliseconds
        else { return 0 }
        for participant in promise.participants {
            try await outbox.enqueue(
                in: tx, peer: "account", method: YediAccount.Notifications.Method.notify,
                request: notification(promise, to: participant.userID))
        }
        return promise.participants.count
    }
}
