import PostgresNIO
import ServiceRuntime
import YediProto

extension ReservationReminder {
    /// `run(_:outbox:_:)` on PostgreSQL, inside the scheduler's transaction: the same checks, the same
    /// notification through the outbox.
    @discardableResult
    static func run(_ job: ScheduledJob, outbox: Outbox, _ tx: PostgresTransaction) async throws -> Bool {
        guard let id = job.subject,
            let row = try await tx.query("SELECT * FROM reservation WHERE id = \(id)").first
        else { return false }
        let reservation = try PostgresBookingStore.decodeReservation(row)
        guard reservation.status == .confirmed,
            reservation.startAtMilliseconds - leadMilliseconds == job.dueAtMilliseconds
        else { return false }
        try await outbox.enqueue(
            in: tx, peer: "account", method: YediAccount.Notifications.Method.notify,
            request: notification(reservation))
        return true
    }
}
