import Foundation
import PostgresNIO
import RPCAccess
import ServiceRuntime

/// The statements and row conversions `PostgresBookingStore`'s methods share. Schedules' breaks and
/// reservations' styles are JSON text, closed weekdays "1,6", as on SQLite (only ever read whole).
extension PostgresBookingStore {
    // MARK: Queries

    static func scheduleQuery(_ designerID: String, _ app: AppID) -> PostgresQuery {
        "SELECT * FROM schedule WHERE designer_id = \(designerID) AND app = \(app.rawValue)"
    }

    static func closedDaysQuery(_ designerID: String, _ app: AppID, from: LocalDay, through: LocalDay)
        -> PostgresQuery
    {
        """
        SELECT day FROM closed_day JOIN schedule USING (designer_id)
        WHERE designer_id = \(designerID) AND schedule.app = \(app.rawValue) AND day BETWEEN \(from.key) AND \(through.key)
        ORDER BY day
        """
    }

    static func menuQuery(_ designerID: String, _ app: AppID) -> PostgresQuery {
        "SELECT * FROM style WHERE designer_id = \(designerID) AND app = \(app.rawValue) ORDER BY position"
    }

    static func reservation(customerID: String, key: String, _ app: AppID, _ tx: PostgresTransaction) async throws
        -> ReservationRecord?
    {
        try await tx.execute(BookingStatements.ReservationByKey.self, customerID, key, app.rawValue).first.map(
            decodeReservation)
    }

    // MARK: Writes

    static func insertMenu(designerID: String, _ app: AppID, styles: [StyleRecord], _ tx: PostgresTransaction)
        async throws
    {
        for (position, style) in styles.enumerated() {
            try await tx.query(
                """
                INSERT INTO style (id, designer_id, app, position, name, category, price_krw, duration_minutes)
                VALUES (\(style.id), \(designerID), \(app.rawValue), \(position), \(style.name), \(style.category),
                    \(style.priceKRW), \(style.durationMinutes))
                """)
        }
    }

    /// Inserts the reservation's row; false when the customer's idempotency key is taken (by a committed
    /// reservation: a concurrent one with the key is waited for).
    static func insert(_ reservation: ReservationRecord, _ app: AppID, _ tx: PostgresTransaction) async throws -> Bool {
        let styles = try text(reservation.styles)
        let inserted = try await tx.execute(
            BookingStatements.InsertReservation.self, reservation.id, app.rawValue, reservation.customerID,
            reservation.designerID, reservation.startAtMilliseconds, reservation.endAtMilliseconds,
            reservation.timeZone,
            styles, reservation.totalPriceKRW, reservation.status.rawValue, reservation.idempotencyKey,
            reservation.createdAtMilliseconds, reservation.cancelledAtMilliseconds)
        return !inserted.isEmpty
    }

    // MARK: Rows

    static func decodeSchedule(_ row: PostgresRow) throws -> ScheduleRecord {
        let row = row.makeRandomAccess()
        let breaks = try row["breaks"].decode(String.self)
        let weekdays = try row["closed_weekdays"].decode(String.self)
        return ScheduleRecord(
            designerID: try row["designer_id"].decode(String.self),
            openingMinute: try row["opening_minute"].decode(Int.self),
            closingMinute: try row["closing_minute"].decode(Int.self),
            slotMinutes: try row["slot_minutes"].decode(Int.self), timeZone: try row["time_zone"].decode(String.self),
            breaks: try JSONDecoder().decode([BreakRange].self, from: Data(breaks.utf8)),
            closedWeekdays: weekdays.split(separator: ",").compactMap { Int($0) },
            updatedAtMilliseconds: try row["updated_at_ms"].decode(Int64.self))
    }

    static func decodeStyle(_ row: PostgresRow) throws -> StyleRecord {
        let row = row.makeRandomAccess()
        return StyleRecord(
            id: try row["id"].decode(String.self), name: try row["name"].decode(String.self),
            category: try row["category"].decode(Int.self), priceKRW: try row["price_krw"].decode(Int64.self),
            durationMinutes: try row["duration_minutes"].decode(Int.self))
    }

    /// nil for text that is no date (skipped, as the SQLite store does).
    static func decodeDay(_ row: PostgresRow) throws -> LocalDay? {
        LocalDay(key: try row.decode(String.self))
    }

    static func decodeReservation(_ row: PostgresRow) throws -> ReservationRecord {
        let row = row.makeRandomAccess()
        let styles = try row["styles"].decode(String.self)
        let status = try row["status"].decode(String.self)
        return ReservationRecord(
            id: try row["id"].decode(String.self), customerID: try row["customer_id"].decode(String.self),
            designerID: try row["designer_id"].decode(String.self),
            startAtMilliseconds: try row["start_at_ms"].decode(Int64.self),
            endAtMilliseconds: try row["end_at_ms"].decode(Int64.self),
            timeZone: try row["time_zone"].decode(String.self),
            styles: try JSONDecoder().decode([StyleRecord].self, from: Data(styles.utf8)),
            totalPriceKRW: try row["total_price_krw"].decode(Int64.self),
            status: ReservationState(rawValue: status) ?? .cancelled,
            idempotencyKey: try row["idempotency_key"].decode(String?.self),
            createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self),
            cancelledAtMilliseconds: try row["cancelled_at_ms"].decode(Int64?.self),
            paymentState: try row["payment_status"].decode(String?.self).flatMap(PaymentState.init(rawValue:)),
            paidKRW: try row["paid_krw"].decode(Int64.self), refundedKRW: try row["refunded_krw"].decode(Int64.self),
            cancelReason: try row["cancel_reason"].decode(Int.self),
            cancelNote: try row["cancel_note"].decode(String.self),
            cancelledBy: try row["cancelled_by"].decode(Int.self))
    }

    // MARK: Values

    static func text(_ value: some Encodable) throws -> String {
        String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }

    static func weekdays(_ days: [Int]) -> String {
        days.map(String.init).joined(separator: ",")
    }
}
