import Foundation
import PostgresNIO
import ServiceRuntime
import YediProto

/// Cancelling, refunds, the hold's release and reconciliation on PostgreSQL: what frees a slot or gives
/// money back, each under its reservation's row lock.
extension PostgresPaymentStore {
    func cancelReservation(
        id: String, _ cancellation: Cancellation,
        refundAmount: @escaping @Sendable (_ balance: Int64, _ policy: RefundPolicy, _ start: Int64) -> (Int64, String)
    ) async throws -> (ReservationRecord, RefundRecord?)? {
        let outcome = try await postgres.write {
            [scheduler, outbox] tx -> (reservation: ReservationRecord, refund: RefundRecord?, freed: Bool)? in
            guard let reservation = try await Self.lockReservation(id, tx)?.record else { return nil }
            guard reservation.status == .confirmed else { return (reservation, nil, false) }
            try await Self.markCancelled(id, cancellation, tx)
            var refund: RefundRecord?
            if var payment = try await Self.livePayment(reservationID: id, lock: true, tx) {
                switch payment.state {
                case .prepared:
                    try payment.lifecycle.apply(.holdExpired, at: cancellation.atMilliseconds)
                    try await Self.saveState(payment, tx)
                    try await tx.query("UPDATE reservation SET payment_status = 'expired' WHERE id = \(id)")
                case .paid, .partiallyRefunded:
                    let (amount, rule) = refundAmount(
                        payment.lifecycle.balanceKRW, try await Self.policy(reservation.designerID, tx),
                        reservation.startAtMilliseconds)
                    if amount > 0 {
                        refund = try await Self.requestRefund(
                            of: payment, amountKRW: amount, reason: rule, now: cancellation.atMilliseconds, tx,
                            outbox: outbox)
                    }
                default:
                    break  // confirming: refunded in full once the provider's answer is settled
                }
            }
            try await scheduler.cancel(id: PaymentJobs.holdID(reservationID: id), in: tx)
            try await scheduler.cancel(id: ReservationReminder.jobID(id), in: tx)
            guard let stored = try await Self.lockReservation(id, tx)?.record else { return nil }
            return (stored, refund, true)
        }
        guard let outcome else { return nil }
        if outcome.freed { slotsFreed(outcome.reservation.designerID) }
        return (outcome.reservation, outcome.refund)
    }

    func completeRefund(refundID: String, now: Int64) async throws -> PaymentRecord {
        try await postgres.write { tx in
            guard let paymentID = try await Self.refund(refundID, tx)?.paymentID,
                var payment = try await Self.lockReservationAndPayment(paymentID, tx)?.payment,
                let refund = try await Self.refund(refundID, lock: true, tx)
            else { throw PaymentStoreError.orderNotFound }
            guard refund.state == .requested else { return payment }
            try payment.lifecycle.apply(.refunded(refund.amountKRW), at: now)
            try await Self.saveState(payment, tx)
            try await tx.query("UPDATE payment_refund SET status = 'done', done_at_ms = \(now) WHERE id = \(refundID)")
            try await Self.post(
                PaymentLedger.refund(paymentID: payment.id, refundID: refund.id, amountKRW: refund.amountKRW, at: now),
                tx)
            try await tx.query(
                """
                UPDATE reservation SET payment_status = \(payment.state.rawValue),
                    refunded_krw = \(payment.lifecycle.refundedKRW)
                WHERE id = \(payment.reservationID)
                """)
            return try await Self.payment(id: payment.id, tx) ?? payment
        }
    }

    /// The `payment.hold` job (`Scheduler.handle(_:postgres:)`): an unpaid reservation whose hold ran out
    /// is cancelled (the slot is free again) and its prepared payment expires; a confirmation in flight is
    /// looked at again a minute later.
    func releaseHold(reservationID: String, now: Int64, _ tx: PostgresTransaction) async throws {
        guard let reservation = try await Self.lockReservation(reservationID, tx)?.record,
            reservation.status == .confirmed
        else { return }
        if var payment = try await Self.livePayment(reservationID: reservationID, lock: true, tx) {
            switch payment.state {
            case .confirming:
                try await scheduler.schedule(
                    PaymentJobs.hold(reservationID: reservationID, due: now + PaymentJobs.holdRecheckMilliseconds),
                    in: tx)
                return
            case .prepared:
                try payment.lifecycle.apply(.holdExpired, at: now)
                try await Self.saveState(payment, tx)
            default:
                return  // paid
            }
        }
        try await Self.markCancelled(
            reservationID,
            Cancellation(
                by: .service, reason: Int(YediBooking.CancelReason.paymentExpired.rawValue), note: "",
                atMilliseconds: now), tx)
        try await tx.query(
            "UPDATE reservation SET payment_status = 'expired' WHERE id = \(reservationID) AND payment_status = 'prepared'"
        )
        let (freed, designerID) = (slotsFreed, reservation.designerID)
        tx.afterCommit { freed(designerID) }
    }

    /// The `payment.reconcile` job: a payment still confirming goes to the payment worker, which asks the
    /// provider (the answer was lost, or the process died before committing it).
    func reconcile(paymentID: String, _ tx: PostgresTransaction) async throws {
        let status = try await tx.query("SELECT status FROM payment WHERE id = \(paymentID)").first?.decode(String.self)
        guard status == PaymentState.confirming.rawValue else { return }
        try await outbox.enqueue(
            in: tx, destination: PaymentJobs.workDestination,
            message: YediBooking.PaymentWork(kind: .reconcile, paymentID: paymentID))
    }

    /// At start: every payment left confirming is reconciled now. With replicas, a confirmation another
    /// replica has in flight may be reconciled too; the worker asks the provider, whose answer is the
    /// same either way, and settling twice changes nothing (`settleCaptured` answers `unchanged`).
    func reconcileLeftovers(now: Int64) async throws -> Int {
        try await postgres.write { [scheduler] tx in
            let ids = try await tx.query("SELECT id FROM payment WHERE status = 'confirming' ORDER BY id")
                .map { try $0.decode(String.self) }
            for id in ids {
                if try await !scheduler.move(id: PaymentJobs.reconcileID(paymentID: id), to: now, in: tx) {
                    try await scheduler.schedule(
                        PaymentJobs.reconcile(paymentID: id, due: now), in: tx)
                }
            }
            return ids.count
        }
    }

    /// Account deletion, inside PurgeUser's transaction before the reservations go: the user's upcoming
    /// paid reservations are refunded in full, prepared payments expire, and the kept payments stop naming
    /// the user (as `SQLitePaymentStore.purge`).
    static func purge(_ userID: String, now: Int64, _ tx: PostgresTransaction, outbox: Outbox) async throws {
        let ids = try await tx.query(
            """
            SELECT p.id FROM payment p JOIN reservation r ON r.id = p.reservation_id
            WHERE (r.customer_id = \(userID) OR r.designer_id = \(userID)) AND r.status = 'confirmed'
                AND r.start_at_ms > \(now) AND p.status IN ('prepared', 'paid', 'partially_refunded')
            ORDER BY r.id
            FOR UPDATE OF r, p
            """
        ).map { try $0.decode(String.self) }
        for id in ids {
            guard var payment = try await payment(id: id, tx) else { continue }
            if payment.state == .prepared {
                try payment.lifecycle.apply(.holdExpired, at: now)
                try await saveState(payment, tx)
            } else if payment.lifecycle.balanceKRW > 0 {
                try await requestRefund(
                    of: payment, amountKRW: payment.lifecycle.balanceKRW, reason: "account deleted", now: now, tx,
                    outbox: outbox)
            }
        }
        try await tx.query("UPDATE payment SET customer_id = '' WHERE customer_id = \(userID)")
        try await tx.query("UPDATE payment SET designer_id = '' WHERE designer_id = \(userID)")
        try await tx.query("DELETE FROM refund_policy WHERE designer_id = \(userID)")
    }

    // MARK: Helpers

    /// Records a refund to confirm with the provider and its outbox job (the refund's id is the provider's
    /// idempotency key, so the job's retries refund once). Called under the payment's row lock, which
    /// keeps the balance check and the refund's number right.
    @discardableResult
    static func requestRefund(
        of payment: PaymentRecord, amountKRW: Int64, reason: String, now: Int64, _ tx: PostgresTransaction,
        outbox: Outbox
    ) async throws -> RefundRecord {
        let (pending, count) = try await tx.query(
            """
            SELECT COALESCE(SUM(amount_krw) FILTER (WHERE status = 'requested'), 0)::bigint, count(*)
            FROM payment_refund WHERE payment_id = \(payment.id)
            """
        )[0].decode((Int64, Int64).self)
        let (total, overflow) = pending.addingReportingOverflow(amountKRW)
        guard amountKRW > 0, !overflow, total <= payment.lifecycle.balanceKRW else {
            throw PaymentTransitionError(
                from: payment.state, event: .refunded(amountKRW), problem: "more than the balance left to refund")
        }
        let refund = RefundRecord(
            id: "refund-\(payment.id)-\(count + 1)", paymentID: payment.id, amountKRW: amountKRW, state: .requested,
            reason: String(reason.prefix(200)), requestedAtMilliseconds: now, doneAtMilliseconds: nil)
        try await tx.query(
            """
            INSERT INTO payment_refund (id, payment_id, amount_krw, status, reason, requested_at_ms)
            VALUES (\(refund.id), \(refund.paymentID), \(refund.amountKRW), 'requested', \(refund.reason), \(now))
            """)
        try await outbox.enqueue(
            in: tx, destination: PaymentJobs.workDestination,
            message: YediBooking.PaymentWork(kind: .refund, paymentID: payment.id, refundID: refund.id))
        return refund
    }

    static func markCancelled(_ id: String, _ cancellation: Cancellation, _ tx: PostgresTransaction) async throws {
        try await tx.query(
            """
            UPDATE reservation SET status = 'cancelled', cancelled_at_ms = \(cancellation.atMilliseconds),
                cancel_reason = \(cancellation.reason), cancel_note = \(cancellation.note),
                cancelled_by = \(cancellation.by.rawValue)
            WHERE id = \(id) AND status = 'confirmed'
            """)
        try await tx.query("DELETE FROM booked_cell WHERE reservation_id = \(id)")
    }
}
