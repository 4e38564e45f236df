import GRDB

/// The payment tables (`booking-2`, after `BookingSchema`'s `booking-1`): payments with their
/// transitions and refunds, the append-only ledger, designers' refund policies, webhook events, and the
/// reservation's payment summary and cancellation reason.
enum PaymentSchema {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("booking-2") { db in
            // Payments hold no customer-identifying data beyond customer_id, which PurgeUser blanks (the
            // record stays for accounting, docs/payments.md "Retention"); reservation_id is a loose
            // reference for the same reason (the reservation row goes with the account).
            try db.execute(
                sql: """
                    ALTER TABLE reservation ADD COLUMN payment_status TEXT;
                    ALTER TABLE reservation ADD COLUMN paid_krw INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE reservation ADD COLUMN refunded_krw INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE reservation ADD COLUMN hold_until_ms INTEGER;
                    ALTER TABLE reservation ADD COLUMN cancel_reason INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE reservation ADD COLUMN cancel_note TEXT NOT NULL DEFAULT '';
                    ALTER TABLE reservation ADD COLUMN cancelled_by INTEGER NOT NULL DEFAULT 0;
                    CREATE TABLE payment (
                        id TEXT PRIMARY KEY,
                        order_id TEXT NOT NULL UNIQUE,
                        reservation_id TEXT NOT NULL,
                        customer_id TEXT NOT NULL,
                        designer_id TEXT NOT NULL,
                        order_name TEXT NOT NULL,
                        provider TEXT NOT NULL,
                        payment_key TEXT,
                        amount_krw INTEGER NOT NULL CHECK (amount_krw > 0),
                        refunded_krw INTEGER NOT NULL DEFAULT 0 CHECK (refunded_krw BETWEEN 0 AND amount_krw),
                        status TEXT NOT NULL CHECK (status IN ('prepared', 'confirming', 'paid',
                            'partially_refunded', 'refunded', 'expired', 'failed')),
                        created_at_ms INTEGER NOT NULL,
                        hold_until_ms INTEGER NOT NULL,
                        paid_at_ms INTEGER,
                        failure_code TEXT,
                        failure_message TEXT
                    );
                    -- One live payment per reservation: a second PreparePayment answers the first, and two
                    -- payments can never both capture the same reservation.
                    CREATE UNIQUE INDEX payment_live ON payment(reservation_id)
                        WHERE status IN ('prepared', 'confirming', 'paid', 'partially_refunded');
                    CREATE INDEX payment_by_customer ON payment(customer_id, created_at_ms, id);
                    CREATE INDEX payment_by_designer ON payment(designer_id, created_at_ms, id);
                    CREATE TABLE payment_transition (
                        payment_id TEXT NOT NULL REFERENCES payment(id),
                        seq INTEGER NOT NULL,
                        status TEXT NOT NULL,
                        at_ms INTEGER NOT NULL,
                        PRIMARY KEY (payment_id, seq)
                    ) WITHOUT ROWID;
                    CREATE TABLE payment_refund (
                        id TEXT PRIMARY KEY,
                        payment_id TEXT NOT NULL REFERENCES payment(id),
                        amount_krw INTEGER NOT NULL CHECK (amount_krw > 0),
                        status TEXT NOT NULL CHECK (status IN ('requested', 'done')),
                        reason TEXT NOT NULL,
                        requested_at_ms INTEGER NOT NULL,
                        done_at_ms INTEGER
                    );
                    CREATE INDEX payment_refund_by_payment ON payment_refund(payment_id);
                    -- Append-only double entry (PaymentLedger): a pair per capture and per refund, unique per
                    -- (group, account) so that nothing is posted twice.
                    CREATE TABLE payment_ledger (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        entry_group TEXT NOT NULL,
                        payment_id TEXT NOT NULL,
                        account TEXT NOT NULL CHECK (account IN ('pg_clearing', 'shop_payable')),
                        debit_krw INTEGER NOT NULL CHECK (debit_krw >= 0),
                        credit_krw INTEGER NOT NULL CHECK (credit_krw >= 0),
                        at_ms INTEGER NOT NULL,
                        UNIQUE (entry_group, account)
                    );
                    CREATE INDEX payment_ledger_by_payment ON payment_ledger(payment_id);
                    CREATE TRIGGER payment_ledger_no_update BEFORE UPDATE ON payment_ledger
                    BEGIN SELECT RAISE(ABORT, 'payment_ledger is append-only'); END;
                    CREATE TRIGGER payment_ledger_no_delete BEFORE DELETE ON payment_ledger
                    BEGIN SELECT RAISE(ABORT, 'payment_ledger is append-only'); END;
                    CREATE TABLE refund_policy (
                        designer_id TEXT PRIMARY KEY,
                        full_refund_hours INTEGER NOT NULL,
                        partial_refund_hours INTEGER NOT NULL,
                        partial_refund_percent INTEGER NOT NULL
                    );
                    -- What the webhook received (only recorded there; the outbox processes it).
                    CREATE TABLE payment_event (
                        id TEXT PRIMARY KEY,
                        event_type TEXT NOT NULL,
                        order_id TEXT NOT NULL,
                        provider_status TEXT NOT NULL,
                        received_at_ms INTEGER NOT NULL,
                        processed_at_ms INTEGER
                    );
                    """)
        }
    }
}
