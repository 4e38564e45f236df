import Foundation
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// Cancelling paid reservations: refunds by the shop's policy (in full for the designer), confirmed with
/// the provider and posted to the ledger; the reason and note shown to the other party.
final class PaymentCancelTests: XCTestCase {
    private typealias F = BookingFixture

    func testPaymentCustomerCancellationRefundsByTheDefaultPolicy() async throws {
        let fixture = try await BookingFixture.start()
        let reservation = try await fixture.reserve()  // 2027-03-11 10:00; now 2027-03-10 08:00
        let payment = try await fixture.confirm(try await fixture.prepare(reservation))
        fixture.clock.advance(by: 16 * 3_600)  // 10 h before the start: 50%
        let cancelled = try await fixture.booking.cancelReservation(
            .init(reservationID: reservation.id, reason: .scheduleChange, note: "  출장이 잡혔어요  "),
            options: try fixture.customer())
        XCTAssertEqual(cancelled.status, .cancelled)
        XCTAssertEqual(cancelled.refundedKRW, 22_500)
        XCTAssertEqual(cancelled.paymentStatus, .partiallyRefunded)
        XCTAssertEqual(cancelled.cancelledBy, .customer)
        let designerSees = try await fixture.booking.listReservations(
            .init(filter: .cancelled), options: try fixture.designer())
        XCTAssertEqual(designerSees.reservations.first?.cancelReason, .scheduleChange)
        XCTAssertEqual(designerSees.reservations.first?.cancelNote, "출장이 잡혔어요")
        let stored = try await fixture.payments("customer-1").payments.first
        XCTAssertEqual(stored?.status, .partiallyRefunded)
        XCTAssertEqual(stored?.refunds.map(\.amountKRW), [22_500])
        XCTAssertEqual(stored?.refunds.first?.status, .done)
        XCTAssertEqual(fixture.providerRecord(payment.orderID)?.balanceAmountKRW, 22_500)
        let ledger = try await fixture.checkLedger()
        XCTAssertTrue(ledger.balanced, "\(ledger.problems)")
        XCTAssertEqual(ledger.netKRW, 22_500)
        // Cancelling again answers the cancelled reservation and refunds nothing more.
        let again = try await fixture.booking.cancelReservation(
            .init(reservationID: reservation.id), options: try fixture.customer())
        XCTAssertEqual(again.refundedKRW, 22_500)
        try await fixture.stop()
    }

    func testPaymentDesignerCancellationAlwaysRefundsInFull() async throws {
        let fixture = try await BookingFixture.start()
        let reservation = try await fixture.reserve()
        let payment = try await fixture.confirm(try await fixture.prepare(reservation))
        fixture.clock.advance(by: 25 * 3_600)  // an hour before: a customer would get nothing
        let cancelled = try await fixture.booking.cancelReservation(
            .init(reservationID: reservation.id, reason: .shopCircumstances, note: "원장님 건강 문제로 휴업합니다"),
            options: try fixture.designer())
        XCTAssertEqual(cancelled.refundedKRW, 45_000)
        XCTAssertEqual(cancelled.paymentStatus, .refunded)
        XCTAssertEqual(cancelled.cancelledBy, .designer)
        XCTAssertEqual(fixture.providerRecord(payment.orderID)?.balanceAmountKRW, 0)
        let customerSees = try await fixture.booking.listReservations(
            .init(filter: .cancelled), options: try fixture.customer())
        XCTAssertEqual(customerSees.reservations.first?.cancelNote, "원장님 건강 문제로 휴업합니다")
        try await fixture.stop()
    }

    func testPaymentDesignersOwnPolicyWithinBounds() async throws {
        let fixture = try await BookingFixture.start()
        let reservation = try await fixture.reserve()
        let standard = try await fixture.booking.getRefundPolicy(.init(designerID: "designer-1"))
        XCTAssertEqual(
            [standard.fullRefundHours, standard.partialRefundHours, standard.partialRefundPercent], [24, 3, 50])
        for (policy, field) in [
            (
                YediBooking.RefundPolicy(fullRefundHours: 200, partialRefundHours: 3, partialRefundPercent: 50),
                "full_refund_hours"
            ),
            (
                YediBooking.RefundPolicy(fullRefundHours: 24, partialRefundHours: 30, partialRefundPercent: 50),
                "partial_refund_hours"
            ),
            (
                YediBooking.RefundPolicy(fullRefundHours: 24, partialRefundHours: 3, partialRefundPercent: -1),
                "partial_refund_percent"
            ),
        ] {
            let refused = await rpcError {
                _ = try await fixture.booking.updateRefundPolicy(.init(policy: policy), options: try fixture.designer())
            }
            XCTAssertEqual(refused?.code, .invalidArgument)
            XCTAssertTrue(refused?.message.contains(field) ?? false, "\(String(describing: refused))")
        }
        let customerTries = await statusCode {
            _ = try await fixture.booking.updateRefundPolicy(
                .init(policy: .init(fullRefundHours: 1)), options: try fixture.customer())
        }
        XCTAssertEqual(customerTries, .permissionDenied)
        _ = try await fixture.booking.updateRefundPolicy(
            .init(policy: .init(fullRefundHours: 48, partialRefundHours: 24, partialRefundPercent: 30)),
            options: try fixture.designer())
        _ = try await fixture.confirm(try await fixture.prepare(reservation))
        // 26 h before the start: 30% under this shop's policy (the default would refund in full).
        let cancelled = try await fixture.booking.cancelReservation(
            .init(reservationID: reservation.id), options: try fixture.customer())
        XCTAssertEqual(cancelled.refundedKRW, 13_500)
        try await fixture.stop()
    }

    func testPaymentCancelReasonFollowsTheFieldRules() async throws {
        let fixture = try await BookingFixture.start()
        let reservation = try await fixture.reserve()
        let cases: [(YediBooking.CancelReservationRequest, String)] = [
            (.init(reservationID: reservation.id, reason: .other), "note"),
            (.init(reservationID: reservation.id, reason: .paymentExpired), "reason"),
            (.init(reservationID: reservation.id, reason: .init(rawValue: 99)), "reason"),
            (.init(reservationID: reservation.id, note: String(repeating: "가", count: 201)), "note"),
            (.init(reservationID: reservation.id, note: "bell\u{07}"), "note"),
        ]
        for (request, field) in cases {
            let refused = await rpcError {
                _ = try await fixture.booking.cancelReservation(request, options: try fixture.customer())
            }
            XCTAssertEqual(refused?.code, .invalidArgument, "\(request)")
            XCTAssertTrue(refused?.message.hasPrefix(field) ?? false, "\(String(describing: refused))")
        }
        let untouched = try await fixture.store.reservation(id: reservation.id)
        XCTAssertEqual(untouched?.status, .confirmed, "nothing stored by a refused cancellation")
        let cancelled = try await fixture.booking.cancelReservation(
            .init(reservationID: reservation.id, reason: .other, note: "다른 곳에서 했어요\n죄송합니다"),
            options: try fixture.customer())
        XCTAssertEqual(cancelled.cancelReason, .other)
        XCTAssertEqual(cancelled.cancelNote, "다른 곳에서 했어요\n죄송합니다")
        try await fixture.stop()
    }

    func testPaymentAccountDeletionKeepsTheRecordWithoutTheCustomerAndRefunds() async throws {
        let fixture = try await BookingFixture.start()
        let payment = try await fixture.confirm(try await fixture.prepare(try await fixture.reserve()))
        let (account, rpc, task) = try await fixture.serviceClient("account")
        _ = try await account.purgeUser(.init(userID: "customer-1"))
        rpc.beginGracefulShutdown()
        await task.value
        try await fixture.settle("the refund of the deleted customer's upcoming booking") {
            try await fixture.store.reservation(id: payment.reservationID) == nil
                && fixture.providerRecord(payment.orderID)?.balanceAmountKRW == 0
        }
        try await fixture.settle("the refund posted") {
            try await fixture.count("SELECT COUNT(*) FROM payment WHERE status = 'refunded'") == 1
        }
        let naming = try await fixture.count(
            """
            SELECT (SELECT COUNT(*) FROM payment WHERE customer_id = 'customer-1' OR designer_id = 'customer-1')
                 + (SELECT COUNT(*) FROM payment_refund WHERE instr(reason, 'customer-1') > 0)
            """)
        XCTAssertEqual(naming, 0, "no payment row names the deleted customer")
        let kept = try await fixture.count("SELECT COUNT(*) FROM payment WHERE customer_id = '' AND amount_krw = 45000")
        XCTAssertEqual(kept, 1, "the payment is kept for accounting")
        let ledger = try await fixture.checkLedger()
        XCTAssertTrue(ledger.balanced, "\(ledger.problems)")
        XCTAssertEqual(ledger.netKRW, 0)
        try await fixture.stop()
    }
}
