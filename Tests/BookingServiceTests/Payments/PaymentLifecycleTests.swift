import XCTest

@testable import BookingService

/// The payment state machine, without a database: every allowed transition, every refused one, the
/// refunded sum's bounds and the kept history.
final class PaymentLifecycleTests: XCTestCase {
    private let events: [PaymentEvent] = [.startConfirming, .approved, .declined, .holdExpired, .refunded(1)]

    func testPaymentTransitionsAllowedFromEachState() throws {
        // (from, event) → to, for every pair the machine accepts; all other pairs must throw.
        let allowed: [PaymentState: [PaymentEvent: PaymentState]] = [
            .prepared: [.startConfirming: .confirming, .holdExpired: .expired],
            .confirming: [.approved: .paid, .declined: .failed],
            .paid: [.refunded(1): .partiallyRefunded],
            .partiallyRefunded: [.refunded(1): .partiallyRefunded],
            .refunded: [:], .expired: [:], .failed: [:],
        ]
        for state in PaymentState.allCases {
            for event in events {
                var life = PaymentLifecycle(
                    stored: state, amountKRW: 10_000, refundedKRW: state == .partiallyRefunded ? 1 : 0,
                    transitions: [PaymentTransitionRecord(state: state, atMilliseconds: 1)])
                let before = life
                if let expected = allowed[state]?[event] {
                    try life.apply(event, at: 2)
                    XCTAssertEqual(life.state, expected, "\(state) + \(event)")
                    XCTAssertEqual(life.transitions.last, PaymentTransitionRecord(state: expected, atMilliseconds: 2))
                } else {
                    XCTAssertThrowsError(try life.apply(event, at: 2), "\(state) + \(event)")
                    XCTAssertEqual(life, before, "a refused transition changes nothing")
                }
            }
        }
    }

    func testPaymentFullJourneyKeepsEveryTransitionWithItsTime() throws {
        var life = try PaymentLifecycle(preparing: 45_000, at: 100)
        try life.apply(.startConfirming, at: 200)
        try life.apply(.approved, at: 300)
        XCTAssertEqual(life.balanceKRW, 45_000)
        try life.apply(.refunded(22_500), at: 400)
        XCTAssertEqual(life.state, .partiallyRefunded)
        XCTAssertEqual(life.balanceKRW, 22_500)
        try life.apply(.refunded(22_500), at: 500)
        XCTAssertEqual(life.state, .refunded)
        XCTAssertEqual(life.balanceKRW, 0)
        XCTAssertEqual(life.transitions.map(\.state), [.prepared, .confirming, .paid, .partiallyRefunded, .refunded])
        XCTAssertEqual(life.transitions.map(\.atMilliseconds), [100, 200, 300, 400, 500])
    }

    func testPaymentRefundsNeverPassTheAmountNorOverflow() throws {
        var life = try PaymentLifecycle(preparing: 10_000, at: 0)
        try life.apply(.startConfirming, at: 1)
        try life.apply(.approved, at: 2)
        XCTAssertThrowsError(try life.apply(.refunded(10_001), at: 3))
        XCTAssertThrowsError(try life.apply(.refunded(0), at: 3))
        XCTAssertThrowsError(try life.apply(.refunded(-5), at: 3))
        try life.apply(.refunded(9_999), at: 3)
        XCTAssertThrowsError(try life.apply(.refunded(Int64.max), at: 4), "overflow is refused, not wrapped")
        XCTAssertEqual(life.refundedKRW, 9_999)
        try life.apply(.refunded(1), at: 5)
        XCTAssertEqual(life.state, .refunded)
    }

    func testPaymentAmountsMustBePositiveAndBounded() {
        XCTAssertThrowsError(try PaymentLifecycle(preparing: 0, at: 0))
        XCTAssertThrowsError(try PaymentLifecycle(preparing: -45_000, at: 0))
        XCTAssertThrowsError(try PaymentLifecycle(preparing: PaymentLifecycle.maximumAmountKRW + 1, at: 0))
        XCTAssertNoThrow(try PaymentLifecycle(preparing: PaymentLifecycle.maximumAmountKRW, at: 0))
    }
}

/// The default refund policy and its bounds.
final class PaymentRefundPolicyTests: XCTestCase {
    private let hour: Int64 = 3_600_000

    func testPaymentDefaultPolicyFullHalfNone() {
        let policy = RefundPolicy.standard
        let start: Int64 = 100 * hour
        XCTAssertEqual(
            policy.customerRefund(balanceKRW: 45_000, start: start, now: start - 24 * hour).amountKRW, 45_000)
        XCTAssertEqual(
            policy.customerRefund(balanceKRW: 45_000, start: start, now: start - 24 * hour + 1).amountKRW, 22_500)
        XCTAssertEqual(policy.customerRefund(balanceKRW: 45_001, start: start, now: start - 3 * hour).amountKRW, 22_500)
        XCTAssertEqual(policy.customerRefund(balanceKRW: 45_000, start: start, now: start - 3 * hour + 1).amountKRW, 0)
    }

    func testPaymentPolicyBounds() {
        XCTAssertNil(RefundPolicy.standard.problem)
        XCTAssertEqual(
            RefundPolicy(fullRefundHours: 0, partialRefundHours: 0, partialRefundPercent: 0).problem?.field,
            "policy.full_refund_hours")
        XCTAssertEqual(
            RefundPolicy(fullRefundHours: 169, partialRefundHours: 0, partialRefundPercent: 0).problem?.field,
            "policy.full_refund_hours")
        XCTAssertEqual(
            RefundPolicy(fullRefundHours: 24, partialRefundHours: 25, partialRefundPercent: 0).problem?.field,
            "policy.partial_refund_hours")
        XCTAssertEqual(
            RefundPolicy(fullRefundHours: 24, partialRefundHours: 3, partialRefundPercent: 101).problem?.field,
            "policy.partial_refund_percent")
    }
}

/// The double-entry ledger's pairs and its check.
final class PaymentLedgerTests: XCTestCase {
    func testPaymentLedgerPairsBalanceAndGiveEachPaymentsNet() {
        var entries = PaymentLedger.capture(paymentID: "p1", amountKRW: 45_000, at: 1)
        entries += PaymentLedger.capture(paymentID: "p2", amountKRW: 85_000, at: 2)
        entries += PaymentLedger.refund(paymentID: "p1", refundID: "r1", amountKRW: 22_500, at: 3)
        let report = PaymentLedger.check(entries)
        XCTAssertTrue(report.balanced, "\(report.problems)")
        XCTAssertEqual(report.entries, 6)
        XCTAssertEqual(report.totalDebitKRW, 152_500)
        XCTAssertEqual(report.netByPayment, ["p1": 22_500, "p2": 85_000])
        XCTAssertEqual(report.netKRW, 107_500)
    }

    func testPaymentLedgerCheckFindsAHalfPairAndOverRefunds() {
        var entries = PaymentLedger.capture(paymentID: "p1", amountKRW: 45_000, at: 1)
        entries.removeLast()
        XCTAssertFalse(PaymentLedger.check(entries).balanced)
        let overRefunded =
            PaymentLedger.capture(paymentID: "p1", amountKRW: 10, at: 1)
            + PaymentLedger.refund(paymentID: "p1", refundID: "r1", amountKRW: 11, at: 2)
        let report = PaymentLedger.check(overRefunded)
        XCTAssertFalse(report.balanced)
        XCTAssertTrue(report.problems.contains { $0.1.contains("refunded more") }, "\(report.problems)")
    }
}
