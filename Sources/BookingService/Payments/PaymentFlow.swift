import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceRuntime

/// The calls to the provider and what their answers do to the store: confirmation (once per payment,
/// however many retries arrive at once), refunds, reconciliation and webhook events. Handlers and the
/// payment worker (the outbox) both go through it, so each answer is settled the same way.
final class PaymentFlow: Sendable {
    let store: any PaymentStore
    let provider: any PaymentProvider
    let clock: any WallClock
    let logger: Logger
    /// Development only: SIGKILL the process between the provider's approval and its commit (the crash
    /// test's kill point, `YEDI_PAYMENT_KILL_AFTER_CONFIRM=1` with `--development`).
    let killAfterConfirm: Bool
    /// Confirmations in flight in this process, by payment id: concurrent retries share one provider call.
    private let inFlight = NIOLockedValueBox<[String: Task<PaymentRecord, any Error>]>([:])

    /// How long a hold lasts: the PG's own payment window is 10 minutes, so a customer who completes its
    /// UI always finds the slot still held.
    static let holdMilliseconds: Int64 = 10 * 60_000
    /// When a confirmation still unsettled is reconciled: well after the provider's 10 s timeout, so no
    /// call of this process can still be in flight.
    static let reconcileAfterMilliseconds: Int64 = 30_000
    /// How long after a confirmation began an order unknown to the provider counts as never confirmed: the
    /// PG's payment window, past which it refuses the confirmation anyway.
    static let unknownOrderGraceMilliseconds: Int64 = 10 * 60_000

    init(
        store: any PaymentStore, provider: any PaymentProvider, clock: any WallClock, logger: Logger,
        killAfterConfirm: Bool = false
    ) {
        self.store = store
        self.provider = provider
        self.clock = clock
        self.logger = logger
        self.killAfterConfirm = killAfterConfirm
    }

    /// Confirms `payment` (confirming) with the provider and settles the answer; concurrent calls for the
    /// same payment wait for the same provider call. Throws `PaymentProviderError.unavailable` when the
    /// outcome is unknown (the payment stays confirming; reconciliation settles it).
    func confirm(_ payment: PaymentRecord) async throws -> PaymentRecord {
        let task = inFlight.withLockedValue { tasks in
            if let running = tasks[payment.id] { return running }
            let task = Task { try await self.callProvider(payment) }
            tasks[payment.id] = task
            return task
        }
        defer { inFlight.withLockedValue { tasks in if tasks[payment.id] == task { tasks[payment.id] = nil } } }
        return try await task.value
    }

    private func callProvider(_ payment: PaymentRecord) async throws -> PaymentRecord {
        do {
            let answer = try await provider.confirm(
                payment.order, paymentKey: payment.paymentKey ?? "", idempotencyKey: payment.id)
            if killAfterConfirm { kill(getpid(), SIGKILL) }
            return try await settle(payment.id, answer: answer)
        } catch PaymentProviderError.declined(let code, let message) {
            if code == "ALREADY_PROCESSED_PAYMENT", let known = try await provider.query(orderID: payment.orderID) {
                return try await settle(payment.id, answer: known)
            }
            return try await store.settleDeclined(
                paymentID: payment.id, code: code, message: message, now: clock.nowMilliseconds)
        }
    }

    /// What the provider says about an order, applied: captured → paid (or refunded at once), aborted or
    /// expired → failed; still in progress (`READY`, `IN_PROGRESS`) → unknown (`PaymentProviderError.unavailable`):
    /// the payment stays confirming for reconciliation, never "failed" while the provider may still capture.
    func settle(_ paymentID: String, answer: ProviderPayment) async throws -> PaymentRecord {
        if answer.status == .ready || answer.status == .inProgress {
            throw PaymentProviderError.unavailable("the provider is still processing the payment")
        }
        guard answer.wasCaptured else {
            return try await store.settleDeclined(
                paymentID: paymentID, code: answer.status.rawValue,
                message: "the provider reports \(answer.status.rawValue)",
                now: clock.nowMilliseconds)
        }
        // The answer must be about this payment: its order and its amount. Anything else is not settled
        // (an operator looks: the ledger check compares with the provider).
        if let payment = try await store.payment(id: paymentID),
            answer.orderID != payment.orderID || answer.totalAmountKRW != payment.amountKRW
        {
            logger.error(
                "payment: the provider's capture does not match the payment; not settled",
                metadata: [
                    "payment": "\(paymentID)", "order": "\(answer.orderID)", "amount": "\(answer.totalAmountKRW)",
                ])
            throw PaymentProviderError.unavailable("the provider's answer does not match the payment")
        }
        if answer.balanceAmountKRW < answer.totalAmountKRW {
            // Refunded at the provider already (its console): recorded here as paid, flagged for an
            // operator, whom the ledger check shows the difference.
            logger.error(
                "payment: the provider has refunded part of it already; record the refund",
                metadata: ["payment": "\(paymentID)", "balance": "\(answer.balanceAmountKRW)"])
        }
        switch try await store.settleCaptured(paymentID: paymentID, now: clock.nowMilliseconds) {
        case .paid(let paid):
            return paid
        case .unchanged(let paid):
            if !paid.state.wasCaptured {
                // Settled as failed or expired, yet the provider captured: never silent. The ledger check
                // (asking the provider about unsettled payments too) lists it for an operator's refund.
                logger.error(
                    "payment: captured by the provider after it was settled as \(paid.state.rawValue); refund it",
                    metadata: ["payment": "\(paid.id)"])
            }
            return paid
        case .refundAtOnce(let captured, let refund):
            logger.warning(
                "payment: captured after its reservation was cancelled; refunding in full",
                metadata: ["payment": "\(captured.id)"])
            _ = try? await self.refund(refund.id)
            return try await store.payment(id: paymentID) ?? captured
        }
    }

    /// Asks the provider about a payment still confirming and settles it (the `payment.reconcile` job's
    /// outbox work).
    func reconcile(_ paymentID: String) async throws {
        guard let payment = try await store.payment(id: paymentID), payment.state == .confirming else { return }
        // A confirmation of this process still waiting for its answer settles itself; asking now could
        // see the provider before it captured.
        if inFlight.withLockedValue({ $0[paymentID] != nil }) {
            throw PaymentProviderError.unavailable("a confirmation is still in flight")
        }
        let began = payment.lifecycle.transitions.last { $0.state == .confirming }?.atMilliseconds ?? 0
        guard let answer = try await provider.query(orderID: payment.orderID) else {
            // Unknown to the provider: final only once no request of ours (another process's, one that died)
            // can still reach it.
            guard clock.nowMilliseconds - began >= Self.unknownOrderGraceMilliseconds else {
                throw PaymentProviderError.unavailable("the provider does not know the order yet")
            }
            _ = try await store.settleDeclined(
                paymentID: paymentID, code: "NOT_CONFIRMED",
                message: "the provider never received the confirmation", now: clock.nowMilliseconds)
            logger.notice("payment: reconciled as never confirmed", metadata: ["payment": "\(paymentID)"])
            return
        }
        let settled = try await settle(paymentID, answer: answer)
        logger.notice(
            "payment: reconciled", metadata: ["payment": "\(paymentID)", "state": "\(settled.state.rawValue)"])
    }

    /// Confirms a recorded refund with the provider (its id the idempotency key) and stores the result.
    @discardableResult
    func refund(_ refundID: String) async throws -> PaymentRecord? {
        guard let refund = try await store.refund(id: refundID) else { return nil }
        guard refund.state == .requested, let payment = try await store.payment(id: refund.paymentID) else {
            return try await store.payment(id: refund.paymentID)
        }
        _ = try await provider.cancel(
            paymentKey: payment.paymentKey ?? "", amountKRW: refund.amountKRW, reason: refund.reason,
            idempotencyKey: refund.id)
        return try await store.completeRefund(refundID: refundID, now: clock.nowMilliseconds)
    }

    /// A webhook event: the body is never trusted, the provider is asked about the order instead.
    func processEvent(_ eventID: String) async throws {
        guard let orderID = try await store.processEvent(id: eventID, now: clock.nowMilliseconds),
            let payment = try await store.payment(orderID: orderID)
        else { return }
        if payment.state == .confirming { try await reconcile(payment.id) }
    }
}
