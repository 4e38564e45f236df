/// The operators' check (`CheckPaymentLedger`, `yedi-probe ledger-check`): the ledger balances, and each
/// payment's captured minus refunded is the same in the ledger, on the payment and, when asked, at the
/// provider.
struct LedgerCheckReport: Sendable {
    var ledger: PaymentLedger.Report
    var paymentsChecked = 0
    var problems: [(String, String)] = []

    var entries: Int { ledger.entries }
    var balanced: Bool { problems.isEmpty && ledger.totalDebitKRW == ledger.totalCreditKRW }
}

extension PaymentFlow {
    func checkLedger(askProvider: Bool) async throws -> LedgerCheckReport {
        let (entries, captured) = try await store.ledger()
        let ledger = PaymentLedger.check(entries)
        var report = LedgerCheckReport(ledger: ledger, problems: ledger.problems)
        let capturedIDs = Set(captured.map(\.id))
        for payment in captured {
            report.paymentsChecked += 1
            let net = ledger.netByPayment[payment.id] ?? 0
            let stored = payment.amountKRW - payment.lifecycle.refundedKRW
            if net != stored {
                report.problems.append((payment.id, "ledger net \(net) KRW, payment says \(stored) KRW"))
            }
            guard askProvider else { continue }
            guard let answer = try await provider.query(orderID: payment.orderID) else {
                report.problems.append((payment.id, "the provider does not know order \(payment.orderID)"))
                continue
            }
            if answer.balanceAmountKRW != net {
                report.problems.append(
                    (payment.id, "ledger net \(net) KRW, the provider holds \(answer.balanceAmountKRW) KRW"))
            }
        }
        if askProvider {
            // Money the provider holds for a payment recorded here as not captured (a capture that came
            // after the payment was settled as failed): an operator refunds it.
            for payment in try await store.uncapturedPayments() {
                report.paymentsChecked += 1
                if let answer = try await provider.query(orderID: payment.orderID), answer.balanceAmountKRW > 0 {
                    report.problems.append(
                        (
                            payment.id,
                            "the provider holds \(answer.balanceAmountKRW) KRW for a payment recorded as \(payment.state.rawValue)"
                        ))
                }
            }
        }
        for id in ledger.netByPayment.keys.sorted() where !capturedIDs.contains(id) {
            report.problems.append((id, "ledger entries for a payment that never captured money"))
        }
        return report
    }
}
