import Logging
import PostgresNIO
import RPCAccess
import RPCCore
import ServiceRuntime

/// `BookingStore` on the service's PostgreSQL database, for several replicas sharing it
/// (docs/postgres.md, "Booking on PostgreSQL"). Plain SQL with interpolated binds; nothing shared with
/// the SQLite store but the protocol and its contract.
///
/// What SQLite's single writer gave, a constraint or a lock gives here, method by method: one holder per
/// (designer, cell) by the primary key of `booked_cell`; a retried reservation by the unique index on
/// (customer, idempotency key); quotas by a per-customer lock taken before counting; a new designer by
/// `ON CONFLICT`. Reads that promise one snapshot (`bookingSetting`) run in a REPEATABLE READ transaction.
///
/// Like the SQLite store, it sees one app's rows (`app`), and schedules each reservation's day-before
/// reminder in the transaction that books it (the scheduler on PostgreSQL); account deletion settles the
/// user's payments first (`PostgresPaymentStore.purge`).
struct PostgresBookingStore: BookingStore {
    let postgres: ServicePostgres
    /// The app whose rows this store reads and writes.
    var app: AppID = .yedi
    /// Where the day-before reminders go (`ReservationReminder`); nil in tests of booking alone.
    var scheduler: Scheduler? = nil
    /// Where account deletion's refunds go (`PostgresPaymentStore.purge`); nil in tests of booking alone,
    /// where no payment exists.
    var outbox: Outbox? = nil

    static let logger = Logger(label: "yedi.booking.postgres")

    // MARK: Schedules and menus

    func schedule(designerID: String) async throws -> ScheduleRecord? {
        try await rows(Self.scheduleQuery(designerID, app)).first.map(Self.decodeSchedule)
    }

    /// `ON CONFLICT DO NOTHING`: of two first calls for one designer on two replicas, the second waits for
    /// the first's commit, then reads the schedule it stored.
    func createDesigner(_ schedule: ScheduleRecord, menu: [StyleRecord]) async throws -> ScheduleRecord {
        try await postgres.write { [app] tx in
            let breaks = try Self.text(schedule.breaks)
            let weekdays = Self.weekdays(schedule.closedWeekdays)
            let inserted = try await tx.query(
                """
                INSERT INTO schedule (designer_id, app, opening_minute, closing_minute, slot_minutes, time_zone, breaks,
                    closed_weekdays, updated_at_ms)
                VALUES (\(schedule.designerID), \(app.rawValue), \(schedule.openingMinute), \(schedule.closingMinute),
                    \(schedule.slotMinutes), \(schedule.timeZone), \(breaks), \(weekdays), \(schedule.updatedAtMilliseconds))
                ON CONFLICT (designer_id) DO NOTHING RETURNING designer_id
                """)
            guard inserted.isEmpty else {
                try await Self.insertMenu(designerID: schedule.designerID, app, styles: menu, tx)
                return schedule
            }
            guard let existing = try await tx.query(Self.scheduleQuery(schedule.designerID, app)).first else {
                throw RPCError(
                    code: .failedPrecondition, message: "designer \(schedule.designerID) is set up in another app")
            }
            return try Self.decodeSchedule(existing)
        }
    }

    func updateSchedule(_ schedule: ScheduleRecord) async throws {
        let breaks = try Self.text(schedule.breaks)
        let weekdays = Self.weekdays(schedule.closedWeekdays)
        try await postgres.write { [app] tx in
            try await tx.query(
                """
                UPDATE schedule SET opening_minute = \(schedule.openingMinute), closing_minute = \(schedule.closingMinute),
                    slot_minutes = \(schedule.slotMinutes), time_zone = \(schedule.timeZone), breaks = \(breaks),
                    closed_weekdays = \(weekdays), updated_at_ms = \(schedule.updatedAtMilliseconds)
                WHERE designer_id = \(schedule.designerID) AND app = \(app.rawValue)
                """)
        }
    }

    func closedDays(designerID: String, from: LocalDay, through: LocalDay) async throws -> [LocalDay] {
        try await rows(Self.closedDaysQuery(designerID, app, from: from, through: through)).compactMap(Self.decodeDay)
    }

    /// Both changes in one transaction; a day added twice (or by two replicas at once) is one row.
    func updateClosedDays(designerID: String, add: [LocalDay], remove: [LocalDay]) async throws {
        let added = add.map(\.key)
        let removed = remove.map(\.key)
        try await postgres.write { tx in
            if !removed.isEmpty {
                try await tx.query(
                    "DELETE FROM closed_day WHERE designer_id = \(designerID) AND day = ANY(\(removed)::text[])")
            }
            if !added.isEmpty {
                try await tx.query(
                    """
                    INSERT INTO closed_day (designer_id, day) SELECT \(designerID), day FROM unnest(\(added)::text[]) AS day
                    ON CONFLICT DO NOTHING
                    """)
            }
        }
    }

    func menu(designerID: String) async throws -> [StyleRecord] {
        try await rows(Self.menuQuery(designerID, app)).map(Self.decodeStyle)
    }

    func replaceMenu(designerID: String, styles: [StyleRecord]) async throws {
        try await postgres.write { [app] tx in
            try await tx.query("DELETE FROM style WHERE designer_id = \(designerID) AND app = \(app.rawValue)")
            try await Self.insertMenu(designerID: designerID, app, styles: styles, tx)
        }
    }

    // MARK: Reads of reservations

    /// One snapshot for the four reads, as CreateReservation checks a request against all of them.
    func bookingSetting(
        designerID: String, closedFrom: LocalDay, through: LocalDay, customerID: String, idempotencyKey: String?
    ) async throws -> BookingSetting {
        try await postgres.snapshot { [app] tx in
            let schedule = try await tx.query(Self.scheduleQuery(designerID, app)).first.map(Self.decodeSchedule)
            let closed = try await tx.query(Self.closedDaysQuery(designerID, app, from: closedFrom, through: through))
            let menu = try await tx.query(Self.menuQuery(designerID, app))
            var earlier: ReservationRecord?
            if let idempotencyKey {
                earlier = try await Self.reservation(customerID: customerID, key: idempotencyKey, app, tx)
            }
            return BookingSetting(
                schedule: schedule, closedDays: try closed.compactMap(Self.decodeDay),
                menu: try menu.map(Self.decodeStyle),
                earlier: earlier)
        }
    }

    /// From the held cells (a range scan of the primary key), each run of consecutive cells one interval.
    func bookedTimes(designerID: String, from: Int64, until: Int64) async throws -> BookedTimes {
        let first = from - BookingSchema.cellMilliseconds + 1
        let cells = try await rows(
            """
            SELECT cell_start_ms FROM booked_cell
            WHERE designer_id = \(designerID) AND cell_start_ms >= \(first) AND cell_start_ms < \(until)
            ORDER BY cell_start_ms
            """)
        return BookedTimes(cells: try cells.map { try $0.decode(Int64.self) })
    }

    func reservation(id: String) async throws -> ReservationRecord? {
        try await rows("SELECT * FROM reservation WHERE id = \(id) AND app = \(app.rawValue)").first.map(
            Self.decodeReservation)
    }

    func reservations(
        of party: ReservationParty, filter: ReservationListFilter, now: Int64, after position: ReservationPosition?,
        limit: Int
    ) async throws -> [ReservationRecord] {
        // The SQL text is chosen among fixed pieces (a column, a comparison, an order, by enums); every
        // value is a bind (`$n`).
        let (column, userID) = party.column
        var binds = PostgresBindings()
        func bind(_ value: some PostgresDynamicTypeEncodable) -> String {
            binds.append(value)
            return "$\(binds.count)"
        }
        var sql = "SELECT * FROM reservation WHERE \(column) = \(bind(userID)) AND app = \(bind(app.rawValue))"
        let ascending: Bool
        switch filter {
        case .upcoming:
            sql += " AND status = 'confirmed' AND start_at_ms > \(bind(now))"
            ascending = true
        case .past:
            sql += " AND status = 'confirmed' AND start_at_ms <= \(bind(now))"
            ascending = false
        case .cancelled:
            sql += " AND status = 'cancelled'"
            ascending = false
        }
        if let position {
            sql += " AND (start_at_ms, id) \(ascending ? ">" : "<") (\(bind(position.key)), \(bind(position.id)))"
        }
        sql += ascending ? " ORDER BY start_at_ms, id" : " ORDER BY start_at_ms DESC, id DESC"
        sql += " LIMIT \(bind(limit))"
        return try await rows(PostgresQuery(unsafeSQL: sql, binds: binds)).map(Self.decodeReservation)
    }

    func designerReservations(designerID: String, from: Int64, until: Int64) async throws -> [ReservationRecord] {
        try await rows(
            """
            SELECT * FROM reservation WHERE designer_id = \(designerID) AND app = \(app.rawValue) AND status = 'confirmed'
            AND start_at_ms >= \(from) AND start_at_ms < \(until) ORDER BY start_at_ms, id
            """
        ).map(Self.decodeReservation)
    }

    /// Statements outside a transaction, each its own snapshot (the reads that promise no more).
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await postgres.read { connection in try await connection.query(query, logger: Self.logger).collect() }
    }
}
