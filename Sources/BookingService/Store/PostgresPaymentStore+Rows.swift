import Foundation
import PostgresNIO
import ServiceRuntime

/// Reads, the row locks, and the rows behind every payment method on PostgreSQL.
extension PostgresPaymentStore {
    // MARK: Reads (a payment with its transitions and refunds is one snapshot)

    func payment(id: String) async throws -> PaymentRecord? {
        try await postgres.snapshot { tx in try await Self.payment(id: id, tx) }
    }

    func payment(orderID: String) async throws -> PaymentRecord? {
        try await postgres.snapshot { tx in
            guard let row = try await tx.query("SELECT * FROM payment WHERE order_id = \(orderID)").first else {
                return nil
            }
            return try await Self.payment(row, tx)
        }
    }

    func refund(id: String) async throws -> RefundRecord? {
        try await postgres.snapshot { tx in try await Self.refund(id, tx) }
    }

    func payments(of party: ReservationParty, after position: PagePosition<Int64>?, limit: Int) async throws
        -> [PaymentRecord]
    {
        // The column is one of two fixed names (by the enum); every value is a bind (`$n`).
        let (column, userID) = party.column
        var binds = PostgresBindings()
        binds.append(userID)
        var sql = "SELECT * FROM payment WHERE \(column) = $1"
        if let position {
            binds.append(position.key)
            binds.append(position.id)
            sql += " AND (created_at_ms, id) < ($2, $3)"
        }
        binds.append(limit)
        sql += " ORDER BY created_at_ms DESC, id DESC LIMIT $\(binds.count)"
        let query = PostgresQuery(unsafeSQL: sql, binds: binds)
        return try await postgres.snapshot { tx in
            var payments: [PaymentRecord] = []
            for row in try await tx.query(query) { payments.append(try await Self.payment(row, tx)) }
            return payments
        }
    }

    func movements(designerID: String, from: Int64, until: Int64) async throws -> [LedgerMovement] {
        try await postgres.snapshot { tx in
            try await tx.query(
                """
                SELECT l.at_ms, l.debit_krw - l.credit_krw FROM payment_ledger l JOIN payment p ON p.id = l.payment_id
                WHERE p.designer_id = \(designerID) AND l.account = 'pg_clearing' AND l.at_ms >= \(from)
                    AND l.at_ms < \(until)
                ORDER BY l.seq
                """
            ).map {
                let (at, amount) = try $0.decode((Int64, Int64).self)
                return LedgerMovement(atMilliseconds: at, amountKRW: amount)
            }
        }
    }

    func ledger() async throws -> (entries: [LedgerEntry], captured: [PaymentRecord]) {
        try await postgres.snapshot { tx in
            let entries = try await tx.query(
                """
                SELECT entry_group, payment_id, account, debit_krw, credit_krw, at_ms FROM payment_ledger ORDER BY seq
                """
            ).map { row in
                let (group, paymentID, account, debit, credit, at) = try row.decode(
                    (String, String, String, Int64, Int64, Int64).self)
                return LedgerEntry(
                    group: group, paymentID: paymentID, account: LedgerAccount(rawValue: account) ?? .pgClearing,
                    debitKRW: debit, creditKRW: credit, atMilliseconds: at)
            }
            var captured: [PaymentRecord] = []
            for row in try await tx.query(
                "SELECT * FROM payment WHERE status IN ('paid', 'partially_refunded', 'refunded') ORDER BY id")
            {
                captured.append(try await Self.payment(row, tx))
            }
            return (entries, captured)
        }
    }

    func uncapturedPayments() async throws -> [PaymentRecord] {
        try await postgres.snapshot { tx in
            var payments: [PaymentRecord] = []
            for row in try await tx.query(
                "SELECT * FROM payment WHERE status IN ('failed', 'expired') AND payment_key IS NOT NULL ORDER BY id")
            {
                payments.append(try await Self.payment(row, tx))
            }
            return payments
        }
    }

    // MARK: Row locks (always reservation, then payment, then refund)

    /// The reservation, locked for the rest of the transaction, and the hold an earlier payment started.
    static func lockReservation(_ id: String, _ tx: PostgresTransaction) async throws
        -> (record: ReservationRecord, heldUntil: Int64?)?
    {
        guard let row = try await tx.query("SELECT * FROM reservation WHERE id = \(id) FOR UPDATE").first else {
            return nil
        }
        return (
            try PostgresBookingStore.decodeReservation(row),
            try row.makeRandomAccess()["hold_until_ms"].decode(Int64?.self)
        )
    }

    static func reservationID(orderID: String, _ tx: PostgresTransaction) async throws -> String? {
        try await tx.query("SELECT reservation_id FROM payment WHERE order_id = \(orderID)").first?.decode(String.self)
    }

    static func lockPayment(orderID: String, _ tx: PostgresTransaction) async throws -> PaymentRecord? {
        guard let row = try await tx.query("SELECT * FROM payment WHERE order_id = \(orderID) FOR UPDATE").first else {
            return nil
        }
        return try await payment(row, tx)
    }

    /// The payment's reservation locked first (nil when it is gone), then the payment; nil when there is
    /// no such payment.
    static func lockReservationAndPayment(_ paymentID: String, _ tx: PostgresTransaction) async throws
        -> (reservation: ReservationRecord?, payment: PaymentRecord)?
    {
        guard
            let reservationID = try await tx.query("SELECT reservation_id FROM payment WHERE id = \(paymentID)")
                .first?.decode(String.self)
        else { return nil }
        let reservation = try await lockReservation(reservationID, tx)?.record
        guard let row = try await tx.query("SELECT * FROM payment WHERE id = \(paymentID) FOR UPDATE").first else {
            return nil
        }
        return (reservation, try await payment(row, tx))
    }

    static func livePayment(reservationID: String, lock: Bool = false, _ tx: PostgresTransaction) async throws
        -> PaymentRecord?
    {
        let query: PostgresQuery =
            lock
            ? """
            SELECT * FROM payment WHERE reservation_id = \(reservationID)
                AND status IN ('prepared', 'confirming', 'paid', 'partially_refunded') FOR UPDATE
            """
            : """
            SELECT * FROM payment WHERE reservation_id = \(reservationID)
                AND status IN ('prepared', 'confirming', 'paid', 'partially_refunded')
            """
        guard let row = try await tx.query(query).first else { return nil }
        return try await payment(row, tx)
    }

    // MARK: Rows

    static func payment(id: String, _ tx: PostgresTransaction) async throws -> PaymentRecord? {
        guard let row = try await tx.query("SELECT * FROM payment WHERE id = \(id)").first else { return nil }
        return try await payment(row, tx)
    }

    static func refund(_ id: String, lock: Bool = false, _ tx: PostgresTransaction) async throws -> RefundRecord? {
        let query: PostgresQuery =
            lock
            ? "SELECT * FROM payment_refund WHERE id = \(id) FOR UPDATE"
            : "SELECT * FROM payment_refund WHERE id = \(id)"
        return try await tx.query(query).first.map(refund)
    }

    private static func refund(_ row: PostgresRow) throws -> RefundRecord {
        let row = row.makeRandomAccess()
        return RefundRecord(
            id: try row["id"].decode(String.self), paymentID: try row["payment_id"].decode(String.self),
            amountKRW: try row["amount_krw"].decode(Int64.self),
            state: RefundState(rawValue: try row["status"].decode(String.self)) ?? .requested,
            reason: try row["reason"].decode(String.self),
            requestedAtMilliseconds: try row["requested_at_ms"].decode(Int64.self),
            doneAtMilliseconds: try row["done_at_ms"].decode(Int64?.self))
    }

    /// A `payment` row (`SELECT *`) with its transitions and refunds.
    private static func payment(_ row: PostgresRow, _ tx: PostgresTransaction) async throws -> PaymentRecord {
        let row = row.makeRandomAccess()
        let id = try row["id"].decode(String.self)
        let transitions = try await tx.query(
            "SELECT status, at_ms FROM payment_transition WHERE payment_id = \(id) ORDER BY seq"
        ).map {
            let (state, at) = try $0.decode((String, Int64).self)
            return PaymentTransitionRecord(state: PaymentState(rawValue: state) ?? .failed, atMilliseconds: at)
        }
        let refunds = try await tx.query(
            "SELECT * FROM payment_refund WHERE payment_id = \(id) ORDER BY requested_at_ms, id"
        ).map(refund)
        return PaymentRecord(
            id: id, orderID: try row["order_id"].decode(String.self),
            reservationID: try row["reservation_id"].decode(String.self),
            customerID: try row["customer_id"].decode(String.self),
            designerID: try row["designer_id"].decode(String.self),
            orderName: try row["order_name"].decode(String.self), provider: try row["provider"].decode(String.self),
            paymentKey: try row["payment_key"].decode(String?.self),
            lifecycle: PaymentLifecycle(
                stored: PaymentState(rawValue: try row["status"].decode(String.self)) ?? .failed,
                amountKRW: try row["amount_krw"].decode(Int64.self),
                refundedKRW: try row["refunded_krw"].decode(Int64.self), transitions: transitions),
            createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self),
            holdUntilMilliseconds: try row["hold_until_ms"].decode(Int64.self),
            paidAtMilliseconds: try row["paid_at_ms"].decode(Int64?.self),
            failureCode: try row["failure_code"].decode(String?.self),
            failureMessage: try row["failure_message"].decode(String?.self), refunds: refunds)
    }

    static func insert(_ payment: PaymentRecord, _ tx: PostgresTransaction) async throws {
        try await tx.query(
            """
            INSERT INTO payment (id, order_id, reservation_id, customer_id, designer_id, order_name, provider,
                payment_key, amount_krw, refunded_krw, status, created_at_ms, hold_until_ms)
            VALUES (\(payment.id), \(payment.orderID), \(payment.reservationID), \(payment.customerID),
                \(payment.designerID), \(payment.orderName), \(payment.provider), \(payment.paymentKey),
                \(payment.amountKRW), \(payment.lifecycle.refundedKRW), \(payment.state.rawValue),
                \(payment.createdAtMilliseconds), \(payment.holdUntilMilliseconds))
            """)
        try await appendTransitions(payment, tx)
    }

    /// Writes what `PaymentLifecycle.apply` changed, with the new transitions.
    static func saveState(_ payment: PaymentRecord, _ tx: PostgresTransaction) async throws {
        try await tx.query(
            """
            UPDATE payment SET status = \(payment.state.rawValue), refunded_krw = \(payment.lifecycle.refundedKRW),
                payment_key = \(payment.paymentKey), paid_at_ms = \(payment.paidAtMilliseconds),
                failure_code = \(payment.failureCode), failure_message = \(payment.failureMessage)
            WHERE id = \(payment.id)
            """)
        try await appendTransitions(payment, tx)
    }

    private static func appendTransitions(_ payment: PaymentRecord, _ tx: PostgresTransaction) async throws {
        let stored = try await tx.query("SELECT count(*) FROM payment_transition WHERE payment_id = \(payment.id)")[0]
            .decode(Int.self)
        for (seq, transition) in payment.lifecycle.transitions.enumerated().dropFirst(stored) {
            try await tx.query(
                """
                INSERT INTO payment_transition (payment_id, seq, status, at_ms)
                VALUES (\(payment.id), \(seq), \(transition.state.rawValue), \(transition.atMilliseconds))
                """)
        }
    }

    /// Appends a balanced pair (the unique (group, account) refuses a second posting).
    static func post(_ entries: [LedgerEntry], _ tx: PostgresTransaction) async throws {
        for entry in entries {
            try await tx.query(
                """
                INSERT INTO payment_ledger (entry_group, payment_id, account, debit_krw, credit_krw, at_ms)
                VALUES (\(entry.group), \(entry.paymentID), \(entry.account.rawValue), \(entry.debitKRW),
                    \(entry.creditKRW), \(entry.atMilliseconds))
                """)
        }
    }
}
