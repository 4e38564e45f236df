import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// `PreparePayment`, `ConfirmPayment`, `ListPayments` and the refund policy (docs/payments.md). Access
/// rules are the proto's; these check who owns what and validate fields, and a refused request stores
/// and charges nothing.
extension BookingHandlers {
    /// A customer's payments, or a designer's received ones, newest first.
    var paymentPages: PageList { kit.pageList("payments") }

    func preparePayment(_ request: YediBooking.PreparePaymentRequest, context: ServerContext) async throws
        -> YediBooking.Payment
    {
        let customerID = try context.requireRole(.customer).id
        let reservationID = try BookingRules.id(request.reservationID, field: "reservation_id")
        guard let reservation = try await store.reservation(id: reservationID) else {
            throw PaymentRules.status(.reservationNotFound)
        }
        guard reservation.customerID == customerID else { throw PaymentRules.status(.notTheCustomer) }
        let now = clock.nowMilliseconds
        let lifecycle: PaymentLifecycle
        do {
            lifecycle = try PaymentLifecycle(preparing: reservation.totalPriceKRW, at: now)
        } catch {
            throw RPCError(
                code: .failedPrecondition,
                message: "reservation_id: its price (\(reservation.totalPriceKRW) KRW) cannot be paid online")
        }
        let id = ids.next()
        let payment = PaymentRecord(
            id: id, orderID: "yedi-\(id)", reservationID: reservationID, customerID: customerID,
            designerID: reservation.designerID, orderName: PaymentRules.orderName(reservation.styles),
            provider: payments.provider.name, paymentKey: nil, lifecycle: lifecycle, createdAtMilliseconds: now,
            holdUntilMilliseconds: now + PaymentFlow.holdMilliseconds)
        do {
            return paymentMessage(try await payments.store.prepare(payment, now: now))
        } catch let refused as PaymentStoreError {
            throw PaymentRules.status(refused)
        }
    }

    func confirmPayment(_ request: YediBooking.ConfirmPaymentRequest, context: ServerContext) async throws
        -> YediBooking.Payment
    {
        let customerID = try context.requireRole(.customer).id
        let orderID = try BookingRules.id(request.orderID, field: "order_id")
        let paymentKey = try PaymentRules.paymentKey(request.paymentKey)
        let amount = try PaymentRules.amount(request.amountKRW)
        let start: ConfirmStart
        do {
            start = try await payments.store.beginConfirming(
                orderID: orderID, customerID: customerID, paymentKey: paymentKey, amountKRW: amount,
                now: clock.nowMilliseconds, reconcileAfter: PaymentFlow.reconcileAfterMilliseconds)
        } catch let refused as PaymentStoreError {
            throw PaymentRules.status(refused)
        }
        switch start {
        case .settled(let payment):
            return paymentMessage(payment)
        case .askProvider(let payment):
            let settled: PaymentRecord
            do {
                settled = try await payments.confirm(payment)
            } catch let unknown as PaymentProviderError {
                context.logger.warning("payment: confirmation outcome unknown", metadata: ["error": "\(unknown)"])
                throw RPCError(
                    code: .unavailable,
                    message: "the payment provider did not answer; the payment is settled shortly (see ListPayments)")
            }
            switch settled.state {
            case .failed:
                throw RPCError(
                    code: .failedPrecondition,
                    message: "payment_key: declined by the provider (\(settled.failureCode ?? "")): "
                        + (settled.failureMessage ?? "") + "; nothing was charged")
            case _ where !settled.refunds.isEmpty:
                // Just confirmed and already refunded: the reservation went while it was being confirmed.
                throw RPCError(
                    code: .aborted,
                    message: "order_id: the reservation was cancelled while the payment was confirmed; "
                        + "the payment was refunded in full")
            default:
                return paymentMessage(settled)
            }
        }
    }

    func listPayments(_ request: YediBooking.ListPaymentsRequest, context: ServerContext) async throws
        -> YediBooking.ListPaymentsResponse
    {
        let user = try context.requireUser()
        let party: ReservationParty = user.role == .designer ? .designer(user.id) : .customer(user.id)
        let page = try paymentPages.read(request.page, as: Int64.self)
        let rows = try await payments.store.payments(of: party, after: page.after, limit: page.limit + 1)
        var response = YediBooking.ListPaymentsResponse(
            payments: rows.prefix(page.limit).map(paymentMessage),
            page: paymentPages.next(
                rows.map { PagePosition(key: $0.createdAtMilliseconds, id: $0.id) }, limit: page.limit))
        if case .designer(let designerID) = party {
            let zone = try await store.schedule(designerID: designerID).flatMap { ShopClock(identifier: $0.timeZone) }
            let statement = try await settlement(
                designerID: designerID, year: request.year, month: request.month,
                clock: zone ?? ShopClock(identifier: ShopClock.defaultZone)!)
            response.days = statement.days
            response.month = statement.month
        }
        return response
    }

    func getRefundPolicy(_ request: YediBooking.GetRefundPolicyRequest, context: ServerContext) async throws
        -> YediBooking.RefundPolicy
    {
        let designerID = try BookingRules.id(request.designerID, field: "designer_id")
        _ = try await schedule(of: designerID)
        return Self.policyMessage(try await payments.store.refundPolicy(designerID: designerID), designerID)
    }

    func updateRefundPolicy(_ request: YediBooking.UpdateRefundPolicyRequest, context: ServerContext) async throws
        -> YediBooking.RefundPolicy
    {
        let designerID = try context.requireRole(.designer).id
        guard let value = request.policy else { throw BookingRules.invalid("policy", "required") }
        if !value.designerID.isEmpty, value.designerID != designerID {
            throw RPCError(code: .permissionDenied, message: "policy.designer_id: you can only edit your own policy")
        }
        let policy = RefundPolicy(
            fullRefundHours: Int(value.fullRefundHours), partialRefundHours: Int(value.partialRefundHours),
            partialRefundPercent: Int(value.partialRefundPercent))
        if let problem = policy.problem { throw BookingRules.invalid(problem.field, problem.problem) }
        _ = try await ownSchedule(designerID, context: context)
        try await payments.store.setRefundPolicy(policy, designerID: designerID)
        return Self.policyMessage(policy, designerID)
    }

    func checkPaymentLedger(_ request: YediBooking.CheckPaymentLedgerRequest, context: ServerContext) async throws
        -> YediBooking.CheckPaymentLedgerResponse
    {
        let report = try await payments.checkLedger(askProvider: request.askProvider)
        return YediBooking.CheckPaymentLedgerResponse(
            balanced: report.balanced, entries: Int64(report.entries), paymentsChecked: Int64(report.paymentsChecked),
            totalDebitKRW: report.ledger.totalDebitKRW, totalCreditKRW: report.ledger.totalCreditKRW,
            netKRW: report.ledger.netKRW,
            problems: report.problems.map { YediBooking.LedgerProblem(paymentID: $0.0, problem: $0.1) })
    }

    static func policyMessage(_ policy: RefundPolicy, _ designerID: String) -> YediBooking.RefundPolicy {
        YediBooking.RefundPolicy(
            designerID: designerID, fullRefundHours: Int32(policy.fullRefundHours),
            partialRefundHours: Int32(policy.partialRefundHours),
            partialRefundPercent: Int32(policy.partialRefundPercent))
    }
}
