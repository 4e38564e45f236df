import ServiceRuntime

/// BookingService's tables on PostgreSQL, in step with the SQLite migrator of
/// `BookingServiceDefinition.migrate` (same version names, same order): the runtime's tables first, then
/// `booking-1`, the payments' `booking-2`, `booking-3-apps` and Zipadoo's `booking-3-zipadoo-promises`.
///
/// The tables are SQLite's, translated: milliseconds and money as `bigint`, small numbers as `integer`,
/// JSON copies as `text` (only ever read whole), `AUTOINCREMENT` as an identity column. Constraint names
/// are given where a store tells violations apart by them (`booked_cell_pkey`, `reservation_idempotency`).
enum BookingPostgresSchema {
    static let migrations: [PostgresMigration] =
        RuntimePostgresSchema.migrations + [
            booking1, PaymentPostgresSchema.booking2, apps, PromisePostgresSchema.promises,
        ]

    /// Schedules, closed days, menus, reservations and their held cells (see `BookingSchema.migrate`).
    static let booking1 = PostgresMigration(
        "booking-1",
        [
            """
            CREATE TABLE schedule (
                designer_id text PRIMARY KEY,
                opening_minute integer NOT NULL CHECK (opening_minute BETWEEN 0 AND 1440),
                closing_minute integer NOT NULL CHECK (closing_minute BETWEEN 0 AND 1440),
                slot_minutes integer NOT NULL CHECK (slot_minutes > 0),
                time_zone text NOT NULL,
                breaks text NOT NULL,
                closed_weekdays text NOT NULL,
                updated_at_ms bigint NOT NULL
            )
            """,
            """
            CREATE TABLE closed_day (
                designer_id text NOT NULL REFERENCES schedule (designer_id) ON DELETE CASCADE,
                day text NOT NULL,
                PRIMARY KEY (designer_id, day)
            )
            """,
            """
            CREATE TABLE style (
                id text PRIMARY KEY,
                designer_id text NOT NULL,
                position integer NOT NULL,
                name text NOT NULL,
                category integer NOT NULL,
                price_krw bigint NOT NULL CHECK (price_krw >= 0),
                duration_minutes integer NOT NULL
            )
            """,
            "CREATE INDEX style_by_designer ON style (designer_id, position)",
            """
            CREATE TABLE reservation (
                id text PRIMARY KEY,
                kind text NOT NULL DEFAULT 'booking',
                customer_id text NOT NULL,
                designer_id text NOT NULL,
                start_at_ms bigint NOT NULL,
                end_at_ms bigint NOT NULL CHECK (end_at_ms > start_at_ms),
                time_zone text NOT NULL,
                styles text NOT NULL,
                total_price_krw bigint NOT NULL,
                status text NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
                idempotency_key text,
                created_at_ms bigint NOT NULL,
                cancelled_at_ms bigint
            )
            """,
            // A retry racing its first attempt on another replica meets this index: the second insert waits
            // for the first's commit, then finds the key taken (`PostgresBookingStore.reserve`).
            """
            CREATE UNIQUE INDEX reservation_idempotency ON reservation (customer_id, idempotency_key)
                WHERE idempotency_key IS NOT NULL
            """,
            "CREATE INDEX reservation_by_customer ON reservation (customer_id, status, start_at_ms, id)",
            "CREATE INDEX reservation_by_designer ON reservation (designer_id, status, start_at_ms, id)",
            // No double booking: one row per held 5-minute cell, one holder per (designer, cell start).
            """
            CREATE TABLE booked_cell (
                designer_id text NOT NULL,
                cell_start_ms bigint NOT NULL,
                reservation_id text NOT NULL REFERENCES reservation (id) ON DELETE CASCADE,
                CONSTRAINT booked_cell_pkey PRIMARY KEY (designer_id, cell_start_ms)
            )
            """,
            "CREATE INDEX booked_cell_by_reservation ON booked_cell (reservation_id)",
        ])

    /// Issue 26, apps as tenants (see `BookingSchema.migrateApps`).
    static let apps = PostgresMigration(
        "booking-3-apps",
        [
            "ALTER TABLE schedule ADD COLUMN app text NOT NULL DEFAULT 'yedi'",
            "ALTER TABLE style ADD COLUMN app text NOT NULL DEFAULT 'yedi'",
            "ALTER TABLE reservation ADD COLUMN app text NOT NULL DEFAULT 'yedi'",
        ])
}
