/// The two accounts money moves between: what the gateway holds for the platform (`pg_clearing`) and
/// what the platform owes the designer's shop (`shop_payable`).
enum LedgerAccount: String, Sendable, CaseIterable {
    case pgClearing = "pg_clearing"
    case shopPayable = "shop_payable"
}

/// One line of the append-only ledger (`payment_ledger`, never updated nor deleted: triggers refuse it).
struct LedgerEntry: Equatable, Sendable {
    /// `capture:<payment id>` or `refund:<refund id>`: the pair's name, unique per account, so posting
    /// the same capture or refund twice fails instead of doubling money.
    var group: String
    var paymentID: String
    var account: LedgerAccount
    var debitKRW: Int64
    var creditKRW: Int64
    var atMilliseconds: Int64
}

/// Double entry: every capture and every refund is a pair of entries that cancel out, so the whole
/// ledger sums to zero, and each payment's captured minus refunded is its `pg_clearing` balance.
enum PaymentLedger {
    /// The gateway captured `amount`: it holds it, and the shop is owed it.
    static func capture(paymentID: String, amountKRW: Int64, at milliseconds: Int64) -> [LedgerEntry] {
        pair("capture:\(paymentID)", paymentID, debit: .pgClearing, credit: .shopPayable, amountKRW, milliseconds)
    }

    /// The gateway gave `amount` back: the shop is owed that much less.
    static func refund(paymentID: String, refundID: String, amountKRW: Int64, at milliseconds: Int64)
        -> [LedgerEntry]
    {
        pair("refund:\(refundID)", paymentID, debit: .shopPayable, credit: .pgClearing, amountKRW, milliseconds)
    }

    private static func pair(
        _ group: String, _ paymentID: String, debit: LedgerAccount, credit: LedgerAccount, _ amount: Int64,
        _ at: Int64
    ) -> [LedgerEntry] {
        [
            LedgerEntry(
                group: group, paymentID: paymentID, account: debit, debitKRW: amount, creditKRW: 0, atMilliseconds: at),
            LedgerEntry(
                group: group, paymentID: paymentID, account: credit, debitKRW: 0, creditKRW: amount, atMilliseconds: at),
        ]
    }

    /// What the ledger says, and whether it holds together.
    struct Report: Equatable, Sendable {
        var entries = 0
        var totalDebitKRW: Int64 = 0
        var totalCreditKRW: Int64 = 0
        /// Per payment: captured minus refunded (its `pg_clearing` debits minus credits).
        var netByPayment: [String: Int64] = [:]
        /// Each a payment id (or "") and what is wrong.
        var problems: [(String, String)] = []

        var balanced: Bool { problems.isEmpty && totalDebitKRW == totalCreditKRW }
        var netKRW: Int64 { netByPayment.values.reduce(0, &+) }

        static func == (left: Report, right: Report) -> Bool {
            left.entries == right.entries && left.totalDebitKRW == right.totalDebitKRW
                && left.totalCreditKRW == right.totalCreditKRW && left.netByPayment == right.netByPayment
                && left.problems.map { "\($0.0) \($0.1)" } == right.problems.map { "\($0.0) \($0.1)" }
        }
    }

    /// Checks every pair balances, no amount is negative, and totals do not overflow.
    static func check(_ entries: [LedgerEntry]) -> Report {
        var report = Report()
        var groups: [String: (debit: Int64, credit: Int64, count: Int, payment: String)] = [:]
        for entry in entries {
            report.entries += 1
            guard entry.debitKRW >= 0, entry.creditKRW >= 0, (entry.debitKRW == 0) != (entry.creditKRW == 0) else {
                report.problems.append((entry.paymentID, "\(entry.group): an entry must be a positive debit or credit"))
                continue
            }
            let (debit, debitOverflow) = report.totalDebitKRW.addingReportingOverflow(entry.debitKRW)
            let (credit, creditOverflow) = report.totalCreditKRW.addingReportingOverflow(entry.creditKRW)
            guard !debitOverflow, !creditOverflow else {
                report.problems.append((entry.paymentID, "totals overflow"))
                return report
            }
            report.totalDebitKRW = debit
            report.totalCreditKRW = credit
            groups[entry.group, default: (0, 0, 0, entry.paymentID)].debit += entry.debitKRW
            groups[entry.group, default: (0, 0, 0, entry.paymentID)].credit += entry.creditKRW
            groups[entry.group, default: (0, 0, 0, entry.paymentID)].count += 1
            if entry.account == .pgClearing {
                report.netByPayment[entry.paymentID, default: 0] += entry.debitKRW - entry.creditKRW
            }
        }
        for (group, sums) in groups.sorted(by: { $0.key < $1.key })
        where sums.debit != sums.credit || sums.count != 2 {
            report.problems.append((sums.payment, "\(group): not a balanced pair (\(sums.debit) / \(sums.credit))"))
        }
        for (payment, net) in report.netByPayment.sorted(by: { $0.key < $1.key }) where net < 0 {
            report.problems.append((payment, "refunded more than captured (\(net))"))
        }
        return report
    }
}
