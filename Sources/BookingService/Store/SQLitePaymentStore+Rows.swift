import Foundation
import GRDB
import ServiceRuntime

/// Reads, and the rows behind every payment method.
extension SQLitePaymentStore {
    func payment(id: String) async throws -> PaymentRecord? {
        try await database.read { db in try Self.payment(id: id, db) }
    }

    func payment(orderID: String) async throws -> PaymentRecord? {
        try await database.read { db in try Self.payment(orderID: orderID, db) }
    }

    func refund(id: String) async throws -> RefundRecord? {
        try await database.read { db in try Self.refund(id, db) }
    }

    func payments(of party: ReservationParty, after position: PagePosition<Int64>?, limit: Int) async throws
        -> [PaymentRecord]
    {
        let (column, userID) = party.column
        var sql = "SELECT * FROM payment WHERE \(column) = ?"
        var arguments: StatementArguments = [userID]
        if let position {
            sql += " AND (created_at_ms, id) < (?, ?)"
            arguments += [position.key, position.id]
        }
        sql += " ORDER BY created_at_ms DESC, id DESC LIMIT ?"
        arguments += [limit]
        let (finalSQL, finalArguments) = (sql, arguments)
        return try await database.read { db in
            try Row.fetchAll(db, sql: finalSQL, arguments: finalArguments).map { try Self.payment($0, db) }
        }
    }

    func movements(designerID: String, from: Int64, until: Int64) async throws -> [LedgerMovement] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT l.at_ms, l.debit_krw - l.credit_krw AS amount FROM payment_ledger l
                    JOIN payment p ON p.id = l.payment_id
                    WHERE p.designer_id = ? AND l.account = 'pg_clearing' AND l.at_ms >= ? AND l.at_ms < ?
                    ORDER BY l.seq
                    """, arguments: [designerID, from, until]
            ).map { LedgerMovement(atMilliseconds: $0["at_ms"], amountKRW: $0["amount"]) }
        }
    }

    func ledger() async throws -> (entries: [LedgerEntry], captured: [PaymentRecord]) {
        try await database.read { db in
            let entries = try Row.fetchAll(db, sql: "SELECT * FROM payment_ledger ORDER BY seq").map { row in
                LedgerEntry(
                    group: row["entry_group"], paymentID: row["payment_id"],
                    account: LedgerAccount(rawValue: row["account"]) ?? .pgClearing, debitKRW: row["debit_krw"],
                    creditKRW: row["credit_krw"], atMilliseconds: row["at_ms"])
            }
            let captured = try Row.fetchAll(
                db, sql: "SELECT * FROM payment WHERE status IN ('paid', 'partially_refunded', 'refunded') ORDER BY id"
            ).map { try Self.payment($0, db) }
            return (entries, captured)
        }
    }

    func uncapturedPayments() async throws -> [PaymentRecord] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM payment WHERE status IN ('failed', 'expired')
                        AND payment_key IS NOT NULL ORDER BY id
                    """
            ).map { try Self.payment($0, db) }
        }
    }

    // MARK: Rows

    static func reservationRow(_ id: String, _ db: Database) throws -> Row? {
        try Row.fetchOne(db, sql: "SELECT * FROM reservation WHERE id = ?", arguments: [id])
    }

    static func livePayment(reservationID: String, _ db: Database) throws -> PaymentRecord? {
        try Row.fetchOne(
            db,
            sql: """
                SELECT * FROM payment WHERE reservation_id = ?
                AND status IN ('prepared', 'confirming', 'paid', 'partially_refunded')
                """, arguments: [reservationID]
        ).map { try payment($0, db) }
    }

    static func payment(id: String, _ db: Database) throws -> PaymentRecord? {
        try Row.fetchOne(db, sql: "SELECT * FROM payment WHERE id = ?", arguments: [id]).map { try payment($0, db) }
    }

    static func payment(orderID: String, _ db: Database) throws -> PaymentRecord? {
        try Row.fetchOne(db, sql: "SELECT * FROM payment WHERE order_id = ?", arguments: [orderID]).map {
            try payment($0, db)
        }
    }

    static func refund(_ id: String, _ db: Database) throws -> RefundRecord? {
        try Row.fetchOne(db, sql: "SELECT * FROM payment_refund WHERE id = ?", arguments: [id]).map(refund)
    }

    private static func refund(_ row: Row) -> RefundRecord {
        RefundRecord(
            id: row["id"], paymentID: row["payment_id"], amountKRW: row["amount_krw"],
            state: RefundState(rawValue: row["status"]) ?? .requested, reason: row["reason"],
            requestedAtMilliseconds: row["requested_at_ms"], doneAtMilliseconds: row["done_at_ms"])
    }

    private static func payment(_ row: Row, _ db: Database) throws -> PaymentRecord {
        let id: String = row["id"]
        let transitions = try Row.fetchAll(
            db, sql: "SELECT status, at_ms FROM payment_transition WHERE payment_id = ? ORDER BY seq", arguments: [id]
        ).map {
            PaymentTransitionRecord(state: PaymentState(rawValue: $0["status"]) ?? .failed, atMilliseconds: $0["at_ms"])
        }
        let refunds = try Row.fetchAll(
            db, sql: "SELECT * FROM payment_refund WHERE payment_id = ? ORDER BY requested_at_ms, id", arguments: [id]
        ).map(refund)
        return PaymentRecord(
            id: id, orderID: row["order_id"], reservationID: row["reservation_id"], customerID: row["customer_id"],
            designerID: row["designer_id"], orderName: row["order_name"], provider: row["provider"],
            paymentKey: row["payment_key"],
            lifecycle: PaymentLifecycle(
                stored: PaymentState(rawValue: row["status"]) ?? .failed, amountKRW: row["amount_krw"],
                refundedKRW: row["refunded_krw"], transitions: transitions),
            createdAtMilliseconds: row["created_at_ms"], holdUntilMilliseconds: row["hold_until_ms"],
            paidAtMilliseconds: row["paid_at_ms"], failureCode: row["failure_code"],
            failureMessage: row["failure_message"], refunds: refunds)
    }

    static func insert(_ payment: PaymentRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO payment (id, order_id, reservation_id, customer_id, designer_id, order_name, provider,
                    payment_key, amount_krw, refunded_krw, status, created_at_ms, hold_until_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                payment.id, payment.orderID, payment.reservationID, payment.customerID, payment.designerID,
                payment.orderName, payment.provider, payment.paymentKey, payment.amountKRW,
                payment.lifecycle.refundedKRW, payment.state.rawValue, payment.createdAtMilliseconds,
                payment.holdUntilMilliseconds,
            ])
        try appendTransitions(payment, db)
    }

    /// Writes what `PaymentLifecycle.apply` changed, with the new transitions.
    static func saveState(_ payment: PaymentRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                UPDATE payment SET status = ?, refunded_krw = ?, payment_key = ?, paid_at_ms = ?, failure_code = ?,
                    failure_message = ? WHERE id = ?
                """,
            arguments: [
                payment.state.rawValue, payment.lifecycle.refundedKRW, payment.paymentKey, payment.paidAtMilliseconds,
                payment.failureCode, payment.failureMessage, payment.id,
            ])
        try appendTransitions(payment, db)
    }

    private static func appendTransitions(_ payment: PaymentRecord, _ db: Database) throws {
        let stored =
            try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM payment_transition WHERE payment_id = ?", arguments: [payment.id]) ?? 0
        for (seq, transition) in payment.lifecycle.transitions.enumerated().dropFirst(stored) {
            try db.execute(
                sql: "INSERT INTO payment_transition (payment_id, seq, status, at_ms) VALUES (?, ?, ?, ?)",
                arguments: [payment.id, seq, transition.state.rawValue, transition.atMilliseconds])
        }
    }

    /// Appends a balanced pair (the unique (group, account) refuses a second posting).
    static func post(_ entries: [LedgerEntry], _ db: Database) throws {
        for entry in entries {
            try db.execute(
                sql: """
                    INSERT INTO payment_ledger (entry_group, payment_id, account, debit_krw, credit_krw, at_ms)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    entry.group, entry.paymentID, entry.account.rawValue, entry.debitKRW, entry.creditKRW,
                    entry.atMilliseconds,
                ])
        }
    }
}
