import Foundation
import PostgresNIO
import ServiceRuntime
import YediProto

/// `PaymentStore` on the service's PostgreSQL database, for replicas sharing it (docs/postgres.md,
/// "Payments on PostgreSQL"), with the scheduler (hold releases, reconciliation) and the outbox (refunds,
/// reconciliations, webhook events) written in the same transactions, as `SQLitePaymentStore` does.
///
/// SQLite's single writer ran each method alone; here row locks do. Every method that changes a payment
/// locks its reservation's row first (`FOR UPDATE`), then the payment's, then a refund's: a confirmation,
/// a settlement, a cancellation, a refund's completion and a hold's release of one reservation run one
/// after the other, always taking the locks in that order (so never a deadlock between them), and each
/// reads what the one before committed. The partial unique index `payment_live` stays the last word on
/// one live payment per reservation.
struct PostgresPaymentStore: PaymentStore {
    let postgres: ServicePostgres
    let scheduler: Scheduler
    let outbox: Outbox
    /// Told after a commit that freed a designer's slots (the free-slot cache forgets them).
    let slotsFreed: @Sendable (String) -> Void

    // MARK: Refund policies

    func refundPolicy(designerID: String) async throws -> RefundPolicy {
        try await postgres.snapshot { tx in try await Self.policy(designerID, tx) }
    }

    static func policy(_ designerID: String, _ tx: PostgresTransaction) async throws -> RefundPolicy {
        guard
            let row = try await tx.query(
                """
                SELECT full_refund_hours, partial_refund_hours, partial_refund_percent FROM refund_policy
                WHERE designer_id = \(designerID)
                """
            ).first
        else { return .standard }
        let (full, partial, percent) = try row.decode((Int, Int, Int).self)
        return RefundPolicy(fullRefundHours: full, partialRefundHours: partial, partialRefundPercent: percent)
    }

    func setRefundPolicy(_ policy: RefundPolicy, designerID: String) async throws {
        try await postgres.write { tx in
            try await tx.query(
                """
                INSERT INTO refund_policy (designer_id, full_refund_hours, partial_refund_hours, partial_refund_percent)
                VALUES (\(designerID), \(policy.fullRefundHours), \(policy.partialRefundHours),
                    \(policy.partialRefundPercent))
                ON CONFLICT (designer_id) DO UPDATE SET full_refund_hours = excluded.full_refund_hours,
                    partial_refund_hours = excluded.partial_refund_hours,
                    partial_refund_percent = excluded.partial_refund_percent
                """)
        }
    }

    // MARK: The flow

    func prepare(_ payment: PaymentRecord, now: Int64) async throws -> PaymentRecord {
        try await postgres.write { [scheduler] tx in
            guard let locked = try await Self.lockReservation(payment.reservationID, tx) else {
                throw PaymentStoreError.reservationNotFound
            }
            let (reservation, heldUntil) = (locked.record, locked.heldUntil)
            guard reservation.customerID == payment.customerID else { throw PaymentStoreError.notTheCustomer }
            if let live = try await Self.livePayment(reservationID: payment.reservationID, tx) {
                guard live.state == .prepared || live.state == .confirming else { throw PaymentStoreError.alreadyPaid }
                return live
            }
            guard reservation.status == .confirmed else {
                throw PaymentStoreError.notPayable("the reservation is cancelled")
            }
            guard reservation.startAtMilliseconds > now else {
                throw PaymentStoreError.notPayable("the reservation has started")
            }
            guard reservation.totalPriceKRW > 0 else {
                throw PaymentStoreError.notPayable("the reservation's price is 0: nothing to pay")
            }
            // A failed payment's hold keeps running: retrying with another card never extends it.
            var prepared = payment
            if let heldUntil { prepared.holdUntilMilliseconds = heldUntil }
            try await Self.insert(prepared, tx)
            try await tx.query(
                """
                UPDATE reservation SET payment_status = 'prepared', hold_until_ms = \(prepared.holdUntilMilliseconds)
                WHERE id = \(prepared.reservationID)
                """)
            try await scheduler.schedule(
                PaymentJobs.hold(reservationID: prepared.reservationID, due: prepared.holdUntilMilliseconds),
                in: tx)
            return prepared
        }
    }

    func beginConfirming(
        orderID: String, customerID: String, paymentKey: String, amountKRW: Int64, now: Int64, reconcileAfter: Int64
    ) async throws -> ConfirmStart {
        try await postgres.write { [scheduler] tx in
            guard let reservationID = try await Self.reservationID(orderID: orderID, tx) else {
                throw PaymentStoreError.orderNotFound
            }
            let reservation = try await Self.lockReservation(reservationID, tx)?.record
            guard var payment = try await Self.lockPayment(orderID: orderID, tx) else {
                throw PaymentStoreError.orderNotFound
            }
            guard payment.customerID == customerID else { throw PaymentStoreError.notTheCustomer }
            if let answer = try payment.answerToLaterConfirmation(paymentKey: paymentKey, amountKRW: amountKRW) {
                return answer
            }
            guard amountKRW == payment.amountKRW else {
                throw PaymentStoreError.amountMismatch(expected: payment.amountKRW)
            }
            guard now < payment.holdUntilMilliseconds else { throw PaymentStoreError.holdExpired }
            guard reservation?.status == .confirmed else {
                throw PaymentStoreError.notPayable("the reservation is cancelled")
            }
            try payment.lifecycle.apply(.startConfirming, at: now)
            payment.paymentKey = paymentKey
            try await Self.saveState(payment, tx)
            try await tx.query(
                "UPDATE reservation SET payment_status = 'confirming' WHERE id = \(payment.reservationID)")
            try await scheduler.schedule(
                PaymentJobs.reconcile(paymentID: payment.id, due: now + reconcileAfter),
                in: tx)
            return .askProvider(payment)
        }
    }

    func settleCaptured(paymentID: String, now: Int64) async throws -> SettleOutcome {
        try await postgres.write { [scheduler, outbox] tx in
            guard let locked = try await Self.lockReservationAndPayment(paymentID, tx) else {
                throw PaymentStoreError.orderNotFound
            }
            let reservation = locked.reservation
            var payment = locked.payment
            guard payment.state == .confirming else { return .unchanged(payment) }
            try payment.lifecycle.apply(.approved, at: now)
            payment.paidAtMilliseconds = now
            try await Self.saveState(payment, tx)
            try await Self.post(PaymentLedger.capture(paymentID: payment.id, amountKRW: payment.amountKRW, at: now), tx)
            try await scheduler.cancel(id: PaymentJobs.reconcileID(paymentID: payment.id), in: tx)
            try await tx.query(
                """
                UPDATE reservation SET payment_status = 'paid', paid_krw = \(payment.amountKRW)
                WHERE id = \(payment.reservationID)
                """)
            if reservation?.status == .confirmed {
                try await scheduler.cancel(id: PaymentJobs.holdID(reservationID: payment.reservationID), in: tx)
                return .paid(payment)
            }
            // Captured for a reservation that is gone (cancelled, released, deleted): everything back at once.
            let refund = try await Self.requestRefund(
                of: payment, amountKRW: payment.amountKRW,
                reason: "the reservation was cancelled while the payment was being confirmed", now: now, tx,
                outbox: outbox)
            payment.refunds.append(refund)
            return .refundAtOnce(payment, refund)
        }
    }

    func settleDeclined(paymentID: String, code: String, message: String, now: Int64) async throws -> PaymentRecord {
        try await postgres.write { [scheduler] tx in
            guard var payment = try await Self.lockReservationAndPayment(paymentID, tx)?.payment else {
                throw PaymentStoreError.orderNotFound
            }
            guard payment.state == .confirming else { return payment }
            try payment.lifecycle.apply(.declined, at: now)
            payment.failureCode = String(code.prefix(100))
            payment.failureMessage = String(message.prefix(300))
            try await Self.saveState(payment, tx)
            try await scheduler.cancel(id: PaymentJobs.reconcileID(paymentID: payment.id), in: tx)
            // The slot stays held until the hold runs out: the customer may try another card.
            try await tx.query("UPDATE reservation SET payment_status = 'failed' WHERE id = \(payment.reservationID)")
            return payment
        }
    }

    // MARK: Webhook

    /// `ON CONFLICT DO NOTHING`: the same event delivered to two replicas at once is recorded, and its
    /// work queued, once (the second insert waits for the first's commit, then inserts nothing).
    func recordEvent(id: String, type: String, orderID: String, providerStatus: String, now: Int64) async throws
        -> Bool
    {
        try await postgres.write { [outbox] tx in
            let inserted = try await tx.query(
                """
                INSERT INTO payment_event (id, event_type, order_id, provider_status, received_at_ms)
                VALUES (\(id), \(type), \(orderID), \(providerStatus), \(now)) ON CONFLICT (id) DO NOTHING
                RETURNING id
                """)
            guard !inserted.isEmpty else { return false }
            try await outbox.enqueue(
                in: tx, destination: PaymentJobs.workDestination,
                message: YediBooking.PaymentWork(kind: .webhookEvent, eventID: id))
            return true
        }
    }

    func processEvent(id: String, now: Int64) async throws -> String? {
        try await postgres.write { tx in
            try await tx.query(
                "UPDATE payment_event SET processed_at_ms = \(now) WHERE id = \(id) AND processed_at_ms IS NULL")
            return try await tx.query("SELECT order_id FROM payment_event WHERE id = \(id)").first?.decode(String.self)
        }
    }
}
