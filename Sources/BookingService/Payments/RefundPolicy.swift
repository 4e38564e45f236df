/// How much of a paid reservation a customer's cancellation gets back, by how long before the start it
/// comes: everything up to `fullRefundHours` before, `partialRefundPercent` up to `partialRefundHours`
/// before, nothing after. A designer's cancellation always refunds in full (not a policy matter).
///
/// Default (docs/payments.md): 100% up to 24 h, 50% up to 3 h, none after. A designer sets their own
/// within the bounds below, so that no shop can promise a window longer than a week nor a partial window
/// longer than its full one.
struct RefundPolicy: Equatable, Sendable {
    var fullRefundHours: Int
    var partialRefundHours: Int
    var partialRefundPercent: Int

    static let standard = RefundPolicy(fullRefundHours: 24, partialRefundHours: 3, partialRefundPercent: 50)
    static let fullRefundHoursRange = 1...168

    /// Why the bounds refuse it (field name, problem), nil when it is within them.
    var problem: (field: String, problem: String)? {
        if !Self.fullRefundHoursRange.contains(fullRefundHours) {
            return ("policy.full_refund_hours", "1–168")
        }
        if !(0...fullRefundHours).contains(partialRefundHours) {
            return ("policy.partial_refund_hours", "0 to full_refund_hours (\(fullRefundHours))")
        }
        if !(0...100).contains(partialRefundPercent) { return ("policy.partial_refund_percent", "0–100") }
        return nil
    }

    /// The refund of `balanceKRW` for a customer cancelling at `now` a reservation starting at `start`, and
    /// the rule that gave it (rounded down to whole won: the shop never refunds a fraction of one).
    func customerRefund(balanceKRW: Int64, start: Int64, now: Int64) -> (amountKRW: Int64, rule: String) {
        let before = start - now
        if before >= Int64(fullRefundHours) * 3_600_000 {
            return (balanceKRW, "policy: full refund \(fullRefundHours) h or more before the start")
        }
        if before >= Int64(partialRefundHours) * 3_600_000, partialRefundPercent > 0 {
            // balance ≤ 100,000,000, so balance × 100 cannot overflow.
            return (
                balanceKRW * Int64(partialRefundPercent) / 100,
                "policy: \(partialRefundPercent)% \(partialRefundHours)–\(fullRefundHours) h before the start"
            )
        }
        return (0, "policy: no refund under \(partialRefundHours) h before the start")
    }
}
