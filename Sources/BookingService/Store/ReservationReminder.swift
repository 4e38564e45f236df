import Foundation
import GRDB
import ServiceRuntime
import YediProto

/// YeDi's reminder the day before a reservation (docs/booking.md, "Reminders"): a scheduler job written in
/// the transaction that books, due 24 hours before the start, which notifies the customer (an inbox row
/// and a push, through AccountService's `Notify` on the outbox).
///
/// Booked less than 24 hours ahead: no reminder (the customer has just booked). Cancelled: the cancelling
/// transaction cancels the job. The job still checks its reservation when it runs (a job says "look at
/// this now"): a reservation no longer confirmed, or no longer starting 24 hours after the job's due time,
/// is not reminded of.
enum ReservationReminder {
    static let kind = "reservation-reminder"
    static let leadMilliseconds: Int64 = 24 * 3_600_000

    static func jobID(_ reservationID: String) -> String { "reminder:\(reservationID)" }

    /// The job for a reservation booked now, or nil when its day-before instant has passed already.
    static func job(for reservation: ReservationRecord) -> ScheduledJob? {
        let due = reservation.startAtMilliseconds - leadMilliseconds
        guard due > reservation.createdAtMilliseconds else { return nil }
        return ScheduledJob(
            id: jobID(reservation.id), kind: kind, subject: reservation.id, dueAtMilliseconds: due)
    }

    /// Runs a due reminder inside the scheduler's transaction; answers whether a notification was queued.
    @discardableResult
    static func run(_ job: ScheduledJob, outbox: Outbox, _ db: Database) throws -> Bool {
        guard let id = job.subject,
            let row = try Row.fetchOne(db, sql: "SELECT * FROM reservation WHERE id = ?", arguments: [id])
        else { return false }
        let reservation = try SQLiteBookingStore.reservation(row)
        guard reservation.status == .confirmed,
            reservation.startAtMilliseconds - leadMilliseconds == job.dueAtMilliseconds
        else { return false }
        try outbox.enqueue(
            in: db, peer: "account", method: YediAccount.Notifications.Method.notify,
            request: notification(reservation))
        return true
    }

    /// What the customer reads: the start in the shop's time zone (the zone the reservation was booked in).
    static func notification(_ reservation: ReservationRecord) -> YediAccount.NotifyRequest {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "ko_KR")
        formatter.timeZone = TimeZone(identifier: reservation.timeZone) ?? TimeZone(identifier: "Asia/Seoul")
        formatter.dateFormat = "M월 d일 HH:mm"
        let start = formatter.string(
            from: Date(timeIntervalSince1970: Double(reservation.startAtMilliseconds) / 1_000))
        return YediAccount.NotifyRequest(
            userID: reservation.customerID, app: "yedi", kind: kind, title: "내일 예약이 있어요",
            body: "\(start) 예약을 잊지 마세요. 일정이 바뀌면 앱에서 미리 취소해 주세요.",
            data: [
                .init(key: "reservation_id", value: reservation.id),
                .init(key: "designer_id", value: reservation.designerID),
            ])
    }
}
