import PostgresNIO
import ServiceRuntime

/// The statements of a reservation, prepared once per connection (`HotStatement`): a reserve runs up to
/// seven of them.
enum BookingStatements {
    /// $1 the customer: `PostgresBookingStore.lockCustomer`.
    enum LockCustomer: HotStatement {
        static let parameters: [PostgresDataType] = [.text]
        static let sql = "SELECT pg_advisory_xact_lock(hashtextextended('yedi.booking.customer.' || $1, 0))"
    }

    /// $1 the customer's confirmed reservations starting after $2.
    enum OpenReservations: HotStatement {
        static let parameters: [PostgresDataType] = [.text, .int8]
        static let sql = """
            SELECT count(*) FROM reservation WHERE customer_id = $1 AND status = 'confirmed' AND start_at_ms > $2
            """
    }

    /// $1 the customer's reservations made since $2.
    enum ReservationsSince: HotStatement {
        static let parameters: [PostgresDataType] = [.text, .int8]
        static let sql = "SELECT count(*) FROM reservation WHERE customer_id = $1 AND created_at_ms >= $2"
    }

    /// The customer's ($1) reservation under an idempotency key ($2) in an app ($3): every column
    /// `decodeReservation` reads, named.
    enum ReservationByKey: HotStatement {
        static let parameters: [PostgresDataType] = [.text, .text, .text]
        static let sql = """
            SELECT id, customer_id, designer_id, start_at_ms, end_at_ms, time_zone, styles, total_price_krw, status,
                idempotency_key, created_at_ms, cancelled_at_ms, payment_status, paid_krw, refunded_krw,
                cancel_reason, cancel_note, cancelled_by
            FROM reservation WHERE customer_id = $1 AND idempotency_key = $2 AND app = $3
            """
    }

    /// A reservation's row; no row back when the customer's idempotency key is taken.
    enum InsertReservation: HotStatement {
        static let parameters: [PostgresDataType] = [
            .text, .text, .text, .text, .int8, .int8, .text, .text, .int8, .text, .text, .int8, .int8,
        ]
        static let sql = """
            INSERT INTO reservation (id, app, customer_id, designer_id, start_at_ms, end_at_ms, time_zone, styles,
                total_price_krw, status, idempotency_key, created_at_ms, cancelled_at_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
            ON CONFLICT (customer_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
            RETURNING id
            """
    }

    /// The designer's ($1) cells ($3, ascending) held by the reservation ($2).
    enum InsertCells: HotStatement {
        static let parameters: [PostgresDataType] = [.text, .text, .int8Array]
        static let sql = """
            INSERT INTO booked_cell (designer_id, cell_start_ms, reservation_id)
            SELECT $1, cell, $2 FROM unnest($3::bigint[]) AS cell ORDER BY cell
            """
    }
}
