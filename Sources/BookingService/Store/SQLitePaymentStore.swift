import Foundation
import GRDB
import ServiceRuntime
import YediProto

/// `PaymentStore` on the service's SQLite database, with the runtime's scheduler (hold releases,
/// reconciliation) and outbox (refunds, reconciliations and webhook events to carry out with the
/// provider) written in the same transactions.
struct SQLitePaymentStore: PaymentStore {
    let database: ServiceDatabase
    let scheduler: Scheduler
    let outbox: Outbox
    /// Told after a commit that freed a designer's slots (the free-slot cache forgets them).
    let slotsFreed: @Sendable (String) -> Void

    static let workDestination = PaymentJobs.workDestination
    static let holdJobKind = PaymentJobs.holdKind
    static let reconcileJobKind = PaymentJobs.reconcileKind
    static let holdRecheckMilliseconds = PaymentJobs.holdRecheckMilliseconds

    // MARK: Refund policies

    func refundPolicy(designerID: String) async throws -> RefundPolicy {
        try await database.read { db in try Self.policy(designerID, db) }
    }

    static func policy(_ designerID: String, _ db: Database) throws -> RefundPolicy {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT * FROM refund_policy WHERE designer_id = ?", arguments: [designerID])
        else { return .standard }
        return RefundPolicy(
            fullRefundHours: row["full_refund_hours"], partialRefundHours: row["partial_refund_hours"],
            partialRefundPercent: row["partial_refund_percent"])
    }

    func setRefundPolicy(_ policy: RefundPolicy, designerID: String) async throws {
        try await database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO refund_policy (designer_id, full_refund_hours, partial_refund_hours,
                        partial_refund_percent) VALUES (?, ?, ?, ?)
                    ON CONFLICT(designer_id) DO UPDATE SET full_refund_hours = excluded.full_refund_hours,
                        partial_refund_hours = excluded.partial_refund_hours,
                        partial_refund_percent = excluded.partial_refund_percent
                    """,
                arguments: [
                    designerID, policy.fullRefundHours, policy.partialRefundHours, policy.partialRefundPercent,
                ])
        }
    }

    // MARK: The flow

    func prepare(_ payment: PaymentRecord, now: Int64) async throws -> PaymentRecord {
        try await database.write { db in
            guard let reservation = try Self.reservationRow(payment.reservationID, db) else {
                throw PaymentStoreError.reservationNotFound
            }
            guard reservation["customer_id"] as String == payment.customerID else {
                throw PaymentStoreError.notTheCustomer
            }
            if let live = try Self.livePayment(reservationID: payment.reservationID, db) {
                guard live.state == .prepared || live.state == .confirming else { throw PaymentStoreError.alreadyPaid }
                return live
            }
            guard reservation["status"] as String == "confirmed" else {
                throw PaymentStoreError.notPayable("the reservation is cancelled")
            }
            guard (reservation["start_at_ms"] as Int64) > now else {
                throw PaymentStoreError.notPayable("the reservation has started")
            }
            guard (reservation["total_price_krw"] as Int64) > 0 else {
                throw PaymentStoreError.notPayable("the reservation's price is 0: nothing to pay")
            }
            // A failed payment's hold keeps running: retrying with another card never extends it.
            var prepared = payment
            if let hold = reservation["hold_until_ms"] as Int64? { prepared.holdUntilMilliseconds = hold }
            try Self.insert(prepared, db)
            try db.execute(
                sql: "UPDATE reservation SET payment_status = 'prepared', hold_until_ms = ? WHERE id = ?",
                arguments: [prepared.holdUntilMilliseconds, prepared.reservationID])
            try scheduler.schedule(
                PaymentJobs.hold(reservationID: prepared.reservationID, due: prepared.holdUntilMilliseconds),
                in: db)
            return prepared
        }
    }

    func beginConfirming(
        orderID: String, customerID: String, paymentKey: String, amountKRW: Int64, now: Int64, reconcileAfter: Int64
    ) async throws -> ConfirmStart {
        try await database.write { db in
            guard var payment = try Self.payment(orderID: orderID, db) else { throw PaymentStoreError.orderNotFound }
            guard payment.customerID == customerID else { throw PaymentStoreError.notTheCustomer }
            if let answer = try payment.answerToLaterConfirmation(paymentKey: paymentKey, amountKRW: amountKRW) {
                return answer
            }
            guard amountKRW == payment.amountKRW else {
                throw PaymentStoreError.amountMismatch(expected: payment.amountKRW)
            }
            guard now < payment.holdUntilMilliseconds else { throw PaymentStoreError.holdExpired }
            guard try Self.reservationRow(payment.reservationID, db)?["status"] as String? == "confirmed" else {
                throw PaymentStoreError.notPayable("the reservation is cancelled")
            }
            try payment.lifecycle.apply(.startConfirming, at: now)
            payment.paymentKey = paymentKey
            try Self.saveState(payment, db)
            try db.execute(
                sql: "UPDATE reservation SET payment_status = 'confirming' WHERE id = ?",
                arguments: [payment.reservationID])
            try scheduler.schedule(
                PaymentJobs.reconcile(paymentID: payment.id, due: now + reconcileAfter),
                in: db)
            return .askProvider(payment)
        }
    }

    func settleCaptured(paymentID: String, now: Int64) async throws -> SettleOutcome {
        try await database.write { db in
            guard var payment = try Self.payment(id: paymentID, db) else { throw PaymentStoreError.orderNotFound }
            guard payment.state == .confirming else { return .unchanged(payment) }
            try payment.lifecycle.apply(.approved, at: now)
            payment.paidAtMilliseconds = now
            try Self.saveState(payment, db)
            try Self.post(PaymentLedger.capture(paymentID: payment.id, amountKRW: payment.amountKRW, at: now), db)
            try scheduler.cancel(id: PaymentJobs.reconcileID(paymentID: payment.id), in: db)
            let reservation = try Self.reservationRow(payment.reservationID, db)
            try db.execute(
                sql: "UPDATE reservation SET payment_status = 'paid', paid_krw = ? WHERE id = ?",
                arguments: [payment.amountKRW, payment.reservationID])
            if reservation?["status"] as String? == "confirmed" {
                try scheduler.cancel(id: PaymentJobs.holdID(reservationID: payment.reservationID), in: db)
                return .paid(payment)
            }
            // Captured for a reservation that is gone (cancelled, released, deleted): everything back at once.
            let refund = try Self.requestRefund(
                of: payment, amountKRW: payment.amountKRW,
                reason: "the reservation was cancelled while the payment was being confirmed", now: now, db,
                outbox: outbox)
            payment.refunds.append(refund)
            return .refundAtOnce(payment, refund)
        }
    }

    func settleDeclined(paymentID: String, code: String, message: String, now: Int64) async throws -> PaymentRecord {
        try await database.write { db in
            guard var payment = try Self.payment(id: paymentID, db) else { throw PaymentStoreError.orderNotFound }
            guard payment.state == .confirming else { return payment }
            try payment.lifecycle.apply(.declined, at: now)
            payment.failureCode = String(code.prefix(100))
            payment.failureMessage = String(message.prefix(300))
            try Self.saveState(payment, db)
            try scheduler.cancel(id: PaymentJobs.reconcileID(paymentID: payment.id), in: db)
            // The slot stays held until the hold runs out: the customer may try another card.
            try db.execute(
                sql: "UPDATE reservation SET payment_status = 'failed' WHERE id = ?",
                arguments: [payment.reservationID])
            return payment
        }
    }

    // MARK: Webhook

    func recordEvent(id: String, type: String, orderID: String, providerStatus: String, now: Int64) async throws
        -> Bool
    {
        try await database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO payment_event (id, event_type, order_id, provider_status, received_at_ms)
                    VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING
                    """, arguments: [id, type, orderID, providerStatus, now])
            guard db.changesCount == 1 else { return false }
            try outbox.enqueue(
                in: db, destination: Self.workDestination,
                message: YediBooking.PaymentWork(kind: .webhookEvent, eventID: id))
            return true
        }
    }

    func processEvent(id: String, now: Int64) async throws -> String? {
        try await database.write { db in
            try db.execute(
                sql: "UPDATE payment_event SET processed_at_ms = ? WHERE id = ? AND processed_at_ms IS NULL",
                arguments: [now, id])
            return try String.fetchOne(db, sql: "SELECT order_id FROM payment_event WHERE id = ?", arguments: [id])
        }
    }
}
