import Foundation
import GRDB
import ServiceRuntime
import YediProto

/// Cancelling, refunds, the hold's release and reconciliation: what frees a slot or gives money back.
extension SQLitePaymentStore {
    func cancelReservation(
        id: String, _ cancellation: Cancellation,
        refundAmount: @escaping @Sendable (_ balance: Int64, _ policy: RefundPolicy, _ start: Int64) -> (Int64, String)
    ) async throws -> (ReservationRecord, RefundRecord?)? {
        let outcome = try await database.write { db -> (ReservationRecord, RefundRecord?, freed: Bool)? in
            guard let row = try Self.reservationRow(id, db) else { return nil }
            guard row["status"] as String == "confirmed" else {
                return (try SQLiteBookingStore.reservation(row), nil, false)
            }
            let designerID: String = row["designer_id"]
            try Self.markCancelled(id, cancellation, db)
            var refund: RefundRecord?
            if var payment = try Self.livePayment(reservationID: id, db) {
                switch payment.state {
                case .prepared:
                    try payment.lifecycle.apply(.holdExpired, at: cancellation.atMilliseconds)
                    try Self.saveState(payment, db)
                    try db.execute(
                        sql: "UPDATE reservation SET payment_status = 'expired' WHERE id = ?", arguments: [id])
                case .paid, .partiallyRefunded:
                    let (amount, rule) = refundAmount(
                        payment.lifecycle.balanceKRW, try Self.policy(designerID, db), row["start_at_ms"])
                    if amount > 0 {
                        refund = try Self.requestRefund(
                            of: payment, amountKRW: amount, reason: rule, now: cancellation.atMilliseconds, db,
                            outbox: outbox)
                    }
                default:
                    break  // confirming: refunded in full once the provider's answer is settled
                }
            }
            try scheduler.cancel(id: PaymentJobs.holdID(reservationID: id), in: db)
            try scheduler.cancel(id: ReservationReminder.jobID(id), in: db)
            guard let stored = try Self.reservationRow(id, db) else { return nil }
            return (try SQLiteBookingStore.reservation(stored), refund, true)
        }
        guard let outcome else { return nil }
        if outcome.freed { slotsFreed(outcome.0.designerID) }
        return (outcome.0, outcome.1)
    }

    func completeRefund(refundID: String, now: Int64) async throws -> PaymentRecord {
        try await database.write { db in
            guard let refund = try Self.refund(refundID, db), var payment = try Self.payment(id: refund.paymentID, db)
            else { throw PaymentStoreError.orderNotFound }
            guard refund.state == .requested else { return payment }
            try payment.lifecycle.apply(.refunded(refund.amountKRW), at: now)
            try Self.saveState(payment, db)
            try db.execute(
                sql: "UPDATE payment_refund SET status = 'done', done_at_ms = ? WHERE id = ?",
                arguments: [now, refundID])
            try Self.post(
                PaymentLedger.refund(paymentID: payment.id, refundID: refund.id, amountKRW: refund.amountKRW, at: now),
                db)
            try db.execute(
                sql: "UPDATE reservation SET payment_status = ?, refunded_krw = ? WHERE id = ?",
                arguments: [payment.state.rawValue, payment.lifecycle.refundedKRW, payment.reservationID])
            return try Self.payment(id: payment.id, db) ?? payment
        }
    }

    /// The `payment.hold` job: an unpaid reservation whose hold ran out is cancelled (the slot is free
    /// again) and its prepared payment expires; a confirmation in flight is looked at again a minute later.
    func releaseHold(reservationID: String, now: Int64, _ db: Database) throws {
        guard let row = try Self.reservationRow(reservationID, db), row["status"] as String == "confirmed" else {
            return
        }
        if var payment = try Self.livePayment(reservationID: reservationID, db) {
            switch payment.state {
            case .confirming:
                try scheduler.schedule(
                    PaymentJobs.hold(reservationID: reservationID, due: now + PaymentJobs.holdRecheckMilliseconds),
                    in: db)
                return
            case .prepared:
                try payment.lifecycle.apply(.holdExpired, at: now)
                try Self.saveState(payment, db)
            default:
                return  // paid
            }
        }
        try Self.markCancelled(
            reservationID,
            Cancellation(
                by: .service, reason: Int(YediBooking.CancelReason.paymentExpired.rawValue), note: "",
                atMilliseconds: now), db)
        try db.execute(
            sql: "UPDATE reservation SET payment_status = 'expired' WHERE id = ? AND payment_status = 'prepared'",
            arguments: [reservationID])
        let designerID: String = row["designer_id"]
        let freed = slotsFreed
        db.afterNextTransaction { _ in freed(designerID) }
    }

    /// The `payment.reconcile` job: a payment still confirming goes to the payment worker, which asks the
    /// provider (the answer was lost, or the process died before committing it).
    func reconcile(paymentID: String, _ db: Database) throws {
        guard
            try String.fetchOne(db, sql: "SELECT status FROM payment WHERE id = ?", arguments: [paymentID])
                == PaymentState.confirming.rawValue
        else { return }
        try outbox.enqueue(
            in: db, destination: Self.workDestination,
            message: YediBooking.PaymentWork(kind: .reconcile, paymentID: paymentID))
    }

    /// At start: every payment left confirming by an earlier process is reconciled now (none of this
    /// process's confirmations can be in flight yet).
    func reconcileLeftovers(now: Int64) async throws -> Int {
        try await database.write { db in
            let ids = try String.fetchAll(db, sql: "SELECT id FROM payment WHERE status = 'confirming'")
            for id in ids {
                if try !scheduler.move(id: PaymentJobs.reconcileID(paymentID: id), to: now, in: db) {
                    try scheduler.schedule(
                        PaymentJobs.reconcile(paymentID: id, due: now), in: db)
                }
            }
            return ids.count
        }
    }

    /// Account deletion, inside PurgeUser's transaction before the reservations go: the user's upcoming
    /// paid reservations are refunded (in full: the shop keeps no money for a booking it no longer has),
    /// prepared payments expire, and the kept payments stop naming the user.
    static func purge(_ userID: String, now: Int64, _ db: Database, outbox: Outbox) throws {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT p.id FROM payment p JOIN reservation r ON r.id = p.reservation_id
                WHERE (r.customer_id = ? OR r.designer_id = ?) AND r.status = 'confirmed' AND r.start_at_ms > ?
                AND p.status IN ('prepared', 'paid', 'partially_refunded')
                """, arguments: [userID, userID, now])
        for row in rows {
            guard var payment = try payment(id: row["id"], db) else { continue }
            if payment.state == .prepared {
                try payment.lifecycle.apply(.holdExpired, at: now)
                try saveState(payment, db)
            } else if payment.lifecycle.balanceKRW > 0 {
                try requestRefund(
                    of: payment, amountKRW: payment.lifecycle.balanceKRW, reason: "account deleted", now: now, db,
                    outbox: outbox)
            }
        }
        try db.execute(sql: "UPDATE payment SET customer_id = '' WHERE customer_id = ?", arguments: [userID])
        try db.execute(sql: "UPDATE payment SET designer_id = '' WHERE designer_id = ?", arguments: [userID])
        try db.execute(sql: "DELETE FROM refund_policy WHERE designer_id = ?", arguments: [userID])
    }

    // MARK: Helpers

    /// Records a refund to confirm with the provider and its outbox job (the refund's id is the
    /// provider's idempotency key, so the job's retries refund once).
    @discardableResult
    static func requestRefund(
        of payment: PaymentRecord, amountKRW: Int64, reason: String, now: Int64, _ db: Database, outbox: Outbox
    ) throws -> RefundRecord {
        let pending =
            try Int64.fetchOne(
                db,
                sql:
                    "SELECT COALESCE(SUM(amount_krw), 0) FROM payment_refund WHERE payment_id = ? AND status = 'requested'",
                arguments: [payment.id]) ?? 0
        let (total, overflow) = pending.addingReportingOverflow(amountKRW)
        guard amountKRW > 0, !overflow, total <= payment.lifecycle.balanceKRW else {
            throw PaymentTransitionError(
                from: payment.state, event: .refunded(amountKRW), problem: "more than the balance left to refund")
        }
        let refund = RefundRecord(
            id: "refund-\(payment.id)-\(try refundCount(payment.id, db) + 1)", paymentID: payment.id,
            amountKRW: amountKRW, state: .requested, reason: String(reason.prefix(200)),
            requestedAtMilliseconds: now, doneAtMilliseconds: nil)
        try db.execute(
            sql: """
                INSERT INTO payment_refund (id, payment_id, amount_krw, status, reason, requested_at_ms)
                VALUES (?, ?, ?, 'requested', ?, ?)
                """, arguments: [refund.id, refund.paymentID, refund.amountKRW, refund.reason, now])
        try outbox.enqueue(
            in: db, destination: workDestination,
            message: YediBooking.PaymentWork(kind: .refund, paymentID: payment.id, refundID: refund.id))
        return refund
    }

    private static func refundCount(_ paymentID: String, _ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM payment_refund WHERE payment_id = ?", arguments: [paymentID])
            ?? 0
    }

    static func markCancelled(_ id: String, _ cancellation: Cancellation, _ db: Database) throws {
        try db.execute(
            sql: """
                UPDATE reservation SET status = 'cancelled', cancelled_at_ms = ?, cancel_reason = ?, cancel_note = ?,
                    cancelled_by = ? WHERE id = ? AND status = 'confirmed'
                """,
            arguments: [
                cancellation.atMilliseconds, cancellation.reason, cancellation.note, cancellation.by.rawValue, id,
            ])
        try db.execute(sql: "DELETE FROM booked_cell WHERE reservation_id = ?", arguments: [id])
    }
}
