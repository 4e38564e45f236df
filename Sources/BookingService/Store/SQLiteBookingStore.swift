import Foundation
import GRDB
import RPCAccess
import RPCCore
import ServiceRuntime

/// `BookingStore` on the service's SQLite database (GRDB).
///
/// A store sees one app's rows (`app`): it writes the app on every schedule, style and reservation and
/// every query filters by it; the rows under them (closed days, booked cells, payments) go by their
/// parent's. Booking's methods serve YeDi alone (`proto/booking.proto`), so the service builds it for YeDi.
struct SQLiteBookingStore: BookingStore {
    let database: ServiceDatabase
    /// The app whose rows this store reads and writes.
    var app: AppID = .yedi
    /// Where account deletion's refunds go (`SQLitePaymentStore.purge`); nil in tests of booking alone,
    /// where no payment exists.
    var outbox: Outbox? = nil
    /// Where the day-before reminders go (`ReservationReminder`); nil in tests of booking alone.
    var scheduler: Scheduler? = nil

    // MARK: Schedules and menus

    func schedule(designerID: String) async throws -> ScheduleRecord? {
        try await database.read { db in try Self.schedule(designerID, app, db) }
    }

    func createDesigner(_ schedule: ScheduleRecord, menu: [StyleRecord]) async throws -> ScheduleRecord {
        try await database.write { db in
            if let existing = try Self.schedule(schedule.designerID, app, db) { return existing }
            try Self.save(schedule, app, db, insert: true)
            try Self.insertMenu(designerID: schedule.designerID, app, styles: menu, db)
            return schedule
        }
    }

    func updateSchedule(_ schedule: ScheduleRecord) async throws {
        try await database.write { db in try Self.save(schedule, app, db, insert: false) }
    }

    func closedDays(designerID: String, from: LocalDay, through: LocalDay) async throws -> [LocalDay] {
        try await database.read { db in try Self.closedDays(designerID, app, from: from, through: through, db) }
    }

    private static func closedDays(
        _ designerID: String, _ app: AppID, from: LocalDay, through: LocalDay, _ db: Database
    ) throws
        -> [LocalDay]
    {
        try String.fetchAll(
            db,
            sql: """
                SELECT day FROM closed_day JOIN schedule USING (designer_id)
                WHERE designer_id = ? AND schedule.app = ? AND day BETWEEN ? AND ? ORDER BY day
                """,
            arguments: [designerID, app.rawValue, from.key, through.key]
        ).compactMap(LocalDay.init(key:))
    }

    func updateClosedDays(designerID: String, add: [LocalDay], remove: [LocalDay]) async throws {
        try await database.write { db in
            for day in remove {
                try db.execute(
                    sql: "DELETE FROM closed_day WHERE designer_id = ? AND day = ?", arguments: [designerID, day.key])
            }
            for day in add {
                try db.execute(
                    sql: "INSERT OR IGNORE INTO closed_day (designer_id, day) VALUES (?, ?)",
                    arguments: [designerID, day.key])
            }
        }
    }

    func menu(designerID: String) async throws -> [StyleRecord] {
        try await database.read { db in try Self.menu(designerID, app, db) }
    }

    private static func menu(_ designerID: String, _ app: AppID, _ db: Database) throws -> [StyleRecord] {
        try Row.fetchAll(
            db, sql: "SELECT * FROM style WHERE designer_id = ? AND app = ? ORDER BY position",
            arguments: [designerID, app.rawValue]
        ).map {
            StyleRecord(
                id: $0["id"], name: $0["name"], category: $0["category"], priceKRW: $0["price_krw"],
                durationMinutes: $0["duration_minutes"])
        }
    }

    func replaceMenu(designerID: String, styles: [StyleRecord]) async throws {
        try await database.write { db in
            try db.execute(
                sql: "DELETE FROM style WHERE designer_id = ? AND app = ?", arguments: [designerID, app.rawValue])
            try Self.insertMenu(designerID: designerID, app, styles: styles, db)
        }
    }

    // MARK: Reservations

    /// From the held cells (a range scan of the primary key), each run of consecutive cells one interval.
    func bookedTimes(designerID: String, from: Int64, until: Int64) async throws -> BookedTimes {
        let cells = try await database.read { db in
            try Int64.fetchAll(
                db,
                sql: """
                    SELECT cell_start_ms FROM booked_cell
                    WHERE designer_id = ? AND cell_start_ms >= ? AND cell_start_ms < ? ORDER BY cell_start_ms
                    """, arguments: [designerID, from - BookingSchema.cellMilliseconds + 1, until])
        }
        return BookedTimes(cells: cells)
    }

    /// Holds each 5-minute cell of the reservation's time as a row whose primary key admits one holder.
    func reserve(_ reservation: ReservationRecord, quotas: ReservationQuotas?) async throws -> ReserveOutcome {
        let cells = BookingSchema.cells(from: reservation.startAtMilliseconds, until: reservation.endAtMilliseconds)
        do {
            return try await database.write { db in
                if let key = reservation.idempotencyKey,
                    let existing = try Self.reservation(customerID: reservation.customerID, key: key, app, db)
                {
                    return .existing(existing)
                }
                if let quotas { try Self.check(quotas, for: reservation, db) }
                try Self.insert(reservation, app, db)
                for cell in cells {
                    try db.execute(
                        sql: "INSERT INTO booked_cell (designer_id, cell_start_ms, reservation_id) VALUES (?, ?, ?)",
                        arguments: [reservation.designerID, cell, reservation.id])
                }
                if let scheduler, let reminder = ReservationReminder.job(for: reservation) {
                    try scheduler.schedule(reminder, in: db)
                }
                return .created(reservation)
            }
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY {
            throw BookingStoreError.slotTaken
        }
    }

    /// Counted in the inserting transaction (SQLite has one writer), so concurrent creates cannot overshoot.
    private static func check(_ quotas: ReservationQuotas, for reservation: ReservationRecord, _ db: Database) throws {
        let now = reservation.createdAtMilliseconds
        let open =
            try Int64.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM reservation
                    WHERE customer_id = ? AND status = 'confirmed' AND start_at_ms > ?
                    """, arguments: [reservation.customerID, now]) ?? 0
        try quotas.open.check(used: open)
        let today =
            try Int64.fetchOne(
                db, sql: "SELECT COUNT(*) FROM reservation WHERE customer_id = ? AND created_at_ms >= ?",
                arguments: [reservation.customerID, QuotaDay.start(of: now)]) ?? 0
        try quotas.perDay.check(used: today)
    }

    func bookingSetting(
        designerID: String, closedFrom: LocalDay, through: LocalDay, customerID: String, idempotencyKey: String?
    ) async throws -> BookingSetting {
        try await database.read { db in
            BookingSetting(
                schedule: try Self.schedule(designerID, app, db),
                closedDays: try Self.closedDays(designerID, app, from: closedFrom, through: through, db),
                menu: try Self.menu(designerID, app, db),
                earlier: try idempotencyKey.flatMap { try Self.reservation(customerID: customerID, key: $0, app, db) })
        }
    }

    func reservation(id: String) async throws -> ReservationRecord? {
        try await database.read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM reservation WHERE id = ? AND app = ?", arguments: [id, app.rawValue]
            ).map(Self.reservation)
        }
    }

    func cancel(id: String, at milliseconds: Int64) async throws -> ReservationRecord? {
        try await database.write { db in
            try db.execute(
                sql:
                    "UPDATE reservation SET status = 'cancelled', cancelled_at_ms = ? WHERE id = ? AND app = ? AND status = 'confirmed'",
                arguments: [milliseconds, id, app.rawValue])
            guard
                let cancelled = try Row.fetchOne(
                    db, sql: "SELECT * FROM reservation WHERE id = ? AND app = ?", arguments: [id, app.rawValue]
                ).map(Self.reservation)
            else { return nil }
            try db.execute(sql: "DELETE FROM booked_cell WHERE reservation_id = ?", arguments: [id])
            _ = try scheduler?.cancel(id: ReservationReminder.jobID(id), in: db)
            return cancelled
        }
    }

    func reservations(
        of party: ReservationParty, filter: ReservationListFilter, now: Int64, after position: ReservationPosition?,
        limit: Int
    ) async throws -> [ReservationRecord] {
        let (column, userID) = party.column
        var sql = "SELECT * FROM reservation WHERE \(column) = ? AND app = ?"
        var arguments: StatementArguments = [userID, app.rawValue]
        let ascending: Bool
        switch filter {
        case .upcoming:
            sql += " AND status = 'confirmed' AND start_at_ms > ?"
            arguments += [now]
            ascending = true
        case .past:
            sql += " AND status = 'confirmed' AND start_at_ms <= ?"
            arguments += [now]
            ascending = false
        case .cancelled:
            sql += " AND status = 'cancelled'"
            ascending = false
        }
        if let position {
            sql += ascending ? " AND (start_at_ms, id) > (?, ?)" : " AND (start_at_ms, id) < (?, ?)"
            arguments += [position.key, position.id]
        }
        sql += ascending ? " ORDER BY start_at_ms, id" : " ORDER BY start_at_ms DESC, id DESC"
        sql += " LIMIT ?"
        arguments += [limit]
        let finalSQL = sql
        let finalArguments = arguments
        return try await database.read { db in
            try Row.fetchAll(db, sql: finalSQL, arguments: finalArguments).map(Self.reservation)
        }
    }

    func designerReservations(designerID: String, from: Int64, until: Int64) async throws -> [ReservationRecord] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM reservation WHERE designer_id = ? AND app = ? AND status = 'confirmed'
                    AND start_at_ms >= ? AND start_at_ms < ? ORDER BY start_at_ms, id
                    """, arguments: [designerID, app.rawValue, from, until]
            ).map(Self.reservation)
        }
    }

    // MARK: Deletion

    func purgeUser(_ userID: String, delivery: Delivery, now: Int64) async throws -> Bool {
        try await database.write { db in
            guard try ReceiptLedger.isFirstDelivery(in: db, delivery, nowMilliseconds: now) else {
                return false
            }
            if let outbox { try SQLitePaymentStore.purge(userID, now: now, db, outbox: outbox) }
            // booked_cell rows go with their reservations (ON DELETE CASCADE), closed days with the schedule.
            try db.execute(
                sql: "DELETE FROM reservation WHERE customer_id = ? OR designer_id = ?", arguments: [userID, userID])
            try db.execute(sql: "DELETE FROM style WHERE designer_id = ?", arguments: [userID])
            try db.execute(sql: "DELETE FROM schedule WHERE designer_id = ?", arguments: [userID])
            // Zipadoo: the promises they created, their places in others, their ledger (a write-off).
            try SQLitePromiseStore.purge(userID, now: now, scheduler: scheduler, db)
            return true
        }
    }

    // MARK: Rows

    private static func schedule(_ designerID: String, _ app: AppID, _ db: Database) throws -> ScheduleRecord? {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT * FROM schedule WHERE designer_id = ? AND app = ?",
                arguments: [designerID, app.rawValue])
        else { return nil }
        let breaksJSON: String = row["breaks"]
        let weekdays: String = row["closed_weekdays"]
        return ScheduleRecord(
            designerID: row["designer_id"], openingMinute: row["opening_minute"], closingMinute: row["closing_minute"],
            slotMinutes: row["slot_minutes"], timeZone: row["time_zone"],
            breaks: try JSONDecoder().decode([BreakRange].self, from: Data(breaksJSON.utf8)),
            closedWeekdays: weekdays.split(separator: ",").compactMap { Int($0) },
            updatedAtMilliseconds: row["updated_at_ms"])
    }

    private static func save(_ schedule: ScheduleRecord, _ app: AppID, _ db: Database, insert: Bool) throws {
        let breaks = String(decoding: try JSONEncoder().encode(schedule.breaks), as: UTF8.self)
        let weekdays = schedule.closedWeekdays.map(String.init).joined(separator: ",")
        let arguments: StatementArguments = [
            schedule.openingMinute, schedule.closingMinute, schedule.slotMinutes, schedule.timeZone, breaks, weekdays,
            schedule.updatedAtMilliseconds, schedule.designerID, app.rawValue,
        ]
        if insert {
            try db.execute(
                sql: """
                    INSERT INTO schedule (opening_minute, closing_minute, slot_minutes, time_zone, breaks,
                        closed_weekdays, updated_at_ms, designer_id, app) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: arguments)
        } else {
            try db.execute(
                sql: """
                    UPDATE schedule SET opening_minute = ?, closing_minute = ?, slot_minutes = ?, time_zone = ?,
                        breaks = ?, closed_weekdays = ?, updated_at_ms = ? WHERE designer_id = ? AND app = ?
                    """, arguments: arguments)
        }
    }

    private static func insertMenu(designerID: String, _ app: AppID, styles: [StyleRecord], _ db: Database) throws {
        for (position, style) in styles.enumerated() {
            try db.execute(
                sql: """
                    INSERT INTO style (id, designer_id, app, position, name, category, price_krw, duration_minutes)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    style.id, designerID, app.rawValue, position, style.name, style.category, style.priceKRW,
                    style.durationMinutes,
                ])
        }
    }

    private static func insert(_ reservation: ReservationRecord, _ app: AppID, _ db: Database) throws {
        let styles = String(decoding: try JSONEncoder().encode(reservation.styles), as: UTF8.self)
        try db.execute(
            sql: """
                INSERT INTO reservation (id, app, customer_id, designer_id, start_at_ms, end_at_ms, time_zone, styles,
                    total_price_krw, status, idempotency_key, created_at_ms, cancelled_at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                reservation.id, app.rawValue, reservation.customerID, reservation.designerID,
                reservation.startAtMilliseconds,
                reservation.endAtMilliseconds, reservation.timeZone, styles, reservation.totalPriceKRW,
                reservation.status.rawValue, reservation.idempotencyKey, reservation.createdAtMilliseconds,
                reservation.cancelledAtMilliseconds,
            ])
    }

    private static func reservation(customerID: String, key: String, _ app: AppID, _ db: Database) throws
        -> ReservationRecord?
    {
        try Row.fetchOne(
            db, sql: "SELECT * FROM reservation WHERE customer_id = ? AND idempotency_key = ? AND app = ?",
            arguments: [customerID, key, app.rawValue]
        ).map(reservation)
    }

    static func reservation(_ row: Row) throws -> ReservationRecord {
        let styles: String = row["styles"]
        let status: String = row["status"]
        return ReservationRecord(
            id: row["id"], customerID: row["customer_id"], designerID: row["designer_id"],
            startAtMilliseconds: row["start_at_ms"], endAtMilliseconds: row["end_at_ms"], timeZone: row["time_zone"],
            styles: try JSONDecoder().decode([StyleRecord].self, from: Data(styles.utf8)),
            totalPriceKRW: row["total_price_krw"], status: ReservationState(rawValue: status) ?? .cancelled,
            idempotencyKey: row["idempotency_key"], createdAtMilliseconds: row["created_at_ms"],
            cancelledAtMilliseconds: row["cancelled_at_ms"],
            paymentState: (row["payment_status"] as String?).flatMap(PaymentState.init(rawValue:)),
            paidKRW: row["paid_krw"], refundedKRW: row["refunded_krw"], cancelReason: row["cancel_reason"],
            cancelNote: row["cancel_note"], cancelledBy: row["cancelled_by"])
    }
}
