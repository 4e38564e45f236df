import GRDB

/// BookingService's tables, one migration per schema version.
enum BookingSchema {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("booking-1") { db in
            // `reservation.kind` is 'booking' and stays so: Zipadoo's promises (appointments with several
            // participants, issue 30) got tables of their own (`promise`, `promise_participant`,
            // `potato_entry`, migration `booking-3-zipadoo-promises`), since a promise has no designer,
            // styles, price or slot cells. Styles are a JSON copy as priced when booked (menus change,
            // reservations keep what was agreed).
            try db.execute(
                sql: """
                    CREATE TABLE schedule (
                        designer_id TEXT PRIMARY KEY,
                        opening_minute INTEGER NOT NULL CHECK (opening_minute BETWEEN 0 AND 1440),
                        closing_minute INTEGER NOT NULL CHECK (closing_minute BETWEEN 0 AND 1440),
                        slot_minutes INTEGER NOT NULL CHECK (slot_minutes > 0),
                        time_zone TEXT NOT NULL,
                        breaks TEXT NOT NULL,
                        closed_weekdays TEXT NOT NULL,
                        updated_at_ms INTEGER NOT NULL
                    );
                    CREATE TABLE closed_day (
                        designer_id TEXT NOT NULL REFERENCES schedule(designer_id) ON DELETE CASCADE,
                        day TEXT NOT NULL,
                        PRIMARY KEY (designer_id, day)
                    ) WITHOUT ROWID;
                    CREATE TABLE style (
                        id TEXT PRIMARY KEY,
                        designer_id TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        name TEXT NOT NULL,
                        category INTEGER NOT NULL,
                        price_krw INTEGER NOT NULL CHECK (price_krw >= 0),
                        duration_minutes INTEGER NOT NULL
                    );
                    CREATE INDEX style_by_designer ON style(designer_id, position);
                    CREATE TABLE reservation (
                        id TEXT PRIMARY KEY,
                        kind TEXT NOT NULL DEFAULT 'booking',
                        customer_id TEXT NOT NULL,
                        designer_id TEXT NOT NULL,
                        start_at_ms INTEGER NOT NULL,
                        end_at_ms INTEGER NOT NULL CHECK (end_at_ms > start_at_ms),
                        time_zone TEXT NOT NULL,
                        styles TEXT NOT NULL,
                        total_price_krw INTEGER NOT NULL,
                        status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
                        idempotency_key TEXT,
                        created_at_ms INTEGER NOT NULL,
                        cancelled_at_ms INTEGER
                    );
                    CREATE UNIQUE INDEX reservation_idempotency ON reservation(customer_id, idempotency_key)
                        WHERE idempotency_key IS NOT NULL;
                    CREATE INDEX reservation_by_customer ON reservation(customer_id, status, start_at_ms, id);
                    CREATE INDEX reservation_by_designer ON reservation(designer_id, status, start_at_ms, id);
                    -- No double booking: a confirmed reservation holds each 5-minute cell of [start, end) as a
                    -- row; the primary key lets only one reservation hold a designer's cell. Cancelling deletes
                    -- the rows, so the slot is free again.
                    CREATE TABLE booked_cell (
                        designer_id TEXT NOT NULL,
                        cell_start_ms INTEGER NOT NULL,
                        reservation_id TEXT NOT NULL REFERENCES reservation(id) ON DELETE CASCADE,
                        PRIMARY KEY (designer_id, cell_start_ms)
                    ) WITHOUT ROWID;
                    CREATE INDEX booked_cell_by_reservation ON booked_cell(reservation_id);
                    """)
        }
    }

    /// Issue 26, apps as tenants: schedules, styles and reservations carry their app (closed days, booked
    /// cells and payments go by their parent's); the rows from before belong to YeDi, the only app there
    /// was. Registered after the payments' migration (`booking-2`), whose tables it does not change.
    static func migrateApps(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("booking-3-apps") { db in
            try db.execute(
                sql: """
                    ALTER TABLE schedule ADD COLUMN app TEXT NOT NULL DEFAULT 'yedi';
                    ALTER TABLE style ADD COLUMN app TEXT NOT NULL DEFAULT 'yedi';
                    ALTER TABLE reservation ADD COLUMN app TEXT NOT NULL DEFAULT 'yedi';
                    """)
        }
    }

    /// The granularity of booked cells: every slot start and length is a multiple of it.
    static let cellMilliseconds: Int64 = 5 * 60_000

    /// The cells of [start, end).
    static func cells(from start: Int64, until end: Int64) -> [Int64] {
        Array(stride(from: start, to: end, by: Int(cellMilliseconds)))
    }
}
