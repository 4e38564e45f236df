import ServiceRuntime

/// The payment tables on PostgreSQL (`booking-2`), SQLite's `PaymentSchema` translated. The ledger's
/// append-only rule, two SQLite triggers there, is one trigger function here refusing UPDATE and DELETE.
enum PaymentPostgresSchema {
    static let booking2 = PostgresMigration(
        "booking-2",
        [
            "ALTER TABLE reservation ADD COLUMN payment_status text",
            "ALTER TABLE reservation ADD COLUMN paid_krw bigint NOT NULL DEFAULT 0",
            "ALTER TABLE reservation ADD COLUMN refunded_krw bigint NOT NULL DEFAULT 0",
            "ALTER TABLE reservation ADD COLUMN hold_until_ms bigint",
            "ALTER TABLE reservation ADD COLUMN cancel_reason integer NOT NULL DEFAULT 0",
            "ALTER TABLE reservation ADD COLUMN cancel_note text NOT NULL DEFAULT ''",
            "ALTER TABLE reservation ADD COLUMN cancelled_by integer NOT NULL DEFAULT 0",
            """
            CREATE TABLE payment (
                id text PRIMARY KEY,
                order_id text NOT NULL UNIQUE,
                reservation_id text NOT NULL,
                customer_id text NOT NULL,
                designer_id text NOT NULL,
                order_name text NOT NULL,
                provider text NOT NULL,
                payment_key text,
                amount_krw bigint NOT NULL CHECK (amount_krw > 0),
                refunded_krw bigint NOT NULL DEFAULT 0 CHECK (refunded_krw BETWEEN 0 AND amount_krw),
                status text NOT NULL CHECK (status IN ('prepared', 'confirming', 'paid',
                    'partially_refunded', 'refunded', 'expired', 'failed')),
                created_at_ms bigint NOT NULL,
                hold_until_ms bigint NOT NULL,
                paid_at_ms bigint,
                failure_code text,
                failure_message text
            )
            """,
            // One live payment per reservation.
            """
            CREATE UNIQUE INDEX payment_live ON payment (reservation_id)
                WHERE status IN ('prepared', 'confirming', 'paid', 'partially_refunded')
            """,
            "CREATE INDEX payment_by_customer ON payment (customer_id, created_at_ms, id)",
            "CREATE INDEX payment_by_designer ON payment (designer_id, created_at_ms, id)",
            """
            CREATE TABLE payment_transition (
                payment_id text NOT NULL REFERENCES payment (id),
                seq integer NOT NULL,
                status text NOT NULL,
                at_ms bigint NOT NULL,
                PRIMARY KEY (payment_id, seq)
            )
            """,
            """
            CREATE TABLE payment_refund (
                id text PRIMARY KEY,
                payment_id text NOT NULL REFERENCES payment (id),
                amount_krw bigint NOT NULL CHECK (amount_krw > 0),
                status text NOT NULL CHECK (status IN ('requested', 'done')),
                reason text NOT NULL,
                requested_at_ms bigint NOT NULL,
                done_at_ms bigint
            )
            """,
            "CREATE INDEX payment_refund_by_payment ON payment_refund (payment_id)",
            // Append-only double entry, a pair per capture and per refund, unique per (group, account).
            """
            CREATE TABLE payment_ledger (
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                entry_group text NOT NULL,
                payment_id text NOT NULL,
                account text NOT NULL CHECK (account IN ('pg_clearing', 'shop_payable')),
                debit_krw bigint NOT NULL CHECK (debit_krw >= 0),
                credit_krw bigint NOT NULL CHECK (credit_krw >= 0),
                at_ms bigint NOT NULL,
                UNIQUE (entry_group, account)
            )
            """,
            "CREATE INDEX payment_ledger_by_payment ON payment_ledger (payment_id)",
            """
            CREATE FUNCTION payment_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION 'payment_ledger is append-only';
            END
            $$
            """,
            """
            CREATE TRIGGER payment_ledger_no_update BEFORE UPDATE ON payment_ledger
                FOR EACH ROW EXECUTE FUNCTION payment_ledger_append_only()
            """,
            """
            CREATE TRIGGER payment_ledger_no_delete BEFORE DELETE ON payment_ledger
                FOR EACH ROW EXECUTE FUNCTION payment_ledger_append_only()
            """,
            """
            CREATE TABLE refund_policy (
                designer_id text PRIMARY KEY,
                full_refund_hours integer NOT NULL,
                partial_refund_hours integer NOT NULL,
                partial_refund_percent integer NOT NULL
            )
            """,
            """
            CREATE TABLE payment_event (
                id text PRIMARY KEY,
                event_type text NOT NULL,
                order_id text NOT NULL,
                provider_status text NOT NULL,
                received_at_ms bigint NOT NULL,
                processed_at_ms bigint
            )
            """,
        ])
}
