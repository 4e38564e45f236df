import Foundation
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// Bad input and access: each refusal is a clear status naming the field, and leaves nothing stored and
/// nothing charged.
final class PaymentAccessTests: XCTestCase {
    func testPaymentBadInputIsRefusedWithNothingStoredOrCharged() async throws {
        let fixture = try await BookingFixture.start()
        let reservation = try await fixture.reserve()
        let payment = try await fixture.prepare(reservation)
        let payments = try await fixture.count("SELECT COUNT(*) FROM payment")
        func confirm(_ order: String, _ key: String, _ amount: Int64) async -> RPCError? {
            await rpcError {
                _ = try await fixture.booking.confirmPayment(
                    .init(orderID: order, paymentKey: key, amountKRW: amount), options: try fixture.customer())
            }
        }
        let cases: [(RPCError?, StatusCode, String)] = [
            (await confirm(payment.orderID, "dev_ok_1", 45_001), .failedPrecondition, "amount_krw"),
            (await confirm(payment.orderID, "dev_ok_1", -45_000), .invalidArgument, "amount_krw"),
            (await confirm(payment.orderID, "dev_ok_1", 0), .invalidArgument, "amount_krw"),
            (await confirm(payment.orderID, "dev_ok_1", .max), .invalidArgument, "amount_krw"),
            (
                await confirm(payment.orderID, String(repeating: "k", count: 201), 45_000), .invalidArgument,
                "payment_key"
            ),
            (
                await confirm(payment.orderID, String(repeating: "k", count: 300), 45_000), .invalidArgument,
                "payment_key"
            ),
            (await confirm(payment.orderID, "dev ok; DROP", 45_000), .invalidArgument, "payment_key"),
            (await confirm(payment.orderID, "", 45_000), .invalidArgument, "payment_key"),
            (await confirm("yedi-unknown", "dev_ok_1", 45_000), .notFound, "order_id"),
            (await confirm("", "dev_ok_1", 45_000), .invalidArgument, "order_id"),
        ]
        for (error, code, field) in cases {
            XCTAssertEqual(error?.code, code, "\(String(describing: error))")
            XCTAssertTrue(
                error?.message.contains(field) ?? false, "\(String(describing: error)) should name \(field)")
        }
        let stored = try await fixture.payments("customer-1").payments
        XCTAssertEqual(stored.map(\.status), [.prepared], "still prepared, nothing half-stored")
        XCTAssertNil(fixture.providerRecord(payment.orderID), "the provider was never asked")
        let after = try await fixture.count("SELECT COUNT(*) FROM payment")
        XCTAssertEqual(after, payments)
        try await fixture.stop()
    }

    func testPaymentOnlyTheCustomerPaysAndOnlyThePartiesSeeIt() async throws {
        let fixture = try await BookingFixture.start()
        let reservation = try await fixture.reserve()
        let prepareByOther = await rpcError { _ = try await fixture.prepare(reservation, as: "customer-2") }
        XCTAssertEqual(prepareByOther?.code, .permissionDenied)
        let prepareByDesigner = await statusCode {
            _ = try await fixture.booking.preparePayment(
                .init(reservationID: reservation.id), options: try fixture.designer())
        }
        XCTAssertEqual(prepareByDesigner, .permissionDenied)
        let unknown = await rpcError {
            _ = try await fixture.booking.preparePayment(
                .init(reservationID: "no-such"), options: try fixture.customer())
        }
        XCTAssertEqual(unknown?.code, .notFound)
        let payment = try await fixture.prepare(reservation)
        let foreign = await rpcError { _ = try await fixture.confirm(payment, as: "customer-2") }
        XCTAssertEqual(foreign?.code, .permissionDenied)
        XCTAssertNil(fixture.providerRecord(payment.orderID))
        _ = try await fixture.confirm(payment)

        let others = try await fixture.payments("customer-2").payments
        XCTAssertTrue(others.isEmpty)
        let otherDesigner = try await fixture.payments("designer-2", designer: true).payments
        XCTAssertTrue(otherDesigner.isEmpty)
        let designerSees = try await fixture.payments("designer-1", designer: true).payments
        XCTAssertEqual(designerSees.map(\.id), [payment.id])
        let anonymous = await statusCode { _ = try await fixture.booking.listPayments(.init()) }
        XCTAssertEqual(anonymous, .unauthenticated)
        let ledgerByUser = await statusCode {
            _ = try await fixture.booking.checkPaymentLedger(.init(), options: try fixture.designer())
        }
        XCTAssertEqual(ledgerByUser, .permissionDenied)

        // Not payable: cancelled, or nothing to pay twice.
        let cancelled = try await fixture.reserve(hour: 12)
        _ = try await fixture.booking.cancelReservation(
            .init(reservationID: cancelled.id), options: try fixture.customer())
        let notPayable = await rpcError { _ = try await fixture.prepare(cancelled) }
        XCTAssertEqual(notPayable?.code, .failedPrecondition)
        XCTAssertTrue(notPayable?.message.contains("reservation_id") ?? false)
        try await fixture.stop()
    }

    func testPaymentListPagesAndTheDesignersSettlementStatement() async throws {
        let fixture = try await BookingFixture.start()
        for hour in [10, 11, 12] {
            let reservation = try await fixture.reserve(hour: hour)
            _ = try await fixture.confirm(try await fixture.prepare(reservation), key: "dev_ok_\(hour)")
            fixture.clock.advance(by: 1)
        }
        fixture.clock.advance(by: 16 * 3_600)  // 2027-03-11 00:00: 50% for the 10:00 one
        let first = try await fixture.booking.listReservations(
            .init(filter: .upcoming), options: try fixture.customer())
        _ = try await fixture.booking.cancelReservation(
            .init(reservationID: try XCTUnwrap(first.reservations.first?.id)), options: try fixture.customer())
        let page1 = try await fixture.booking.listPayments(
            .init(page: .init(limit: 2)), options: try fixture.designer())
        XCTAssertEqual(page1.payments.count, 2)
        XCTAssertFalse((page1.page?.nextCursor ?? "").isEmpty)
        let page2 = try await fixture.booking.listPayments(
            .init(page: .init(cursor: page1.page?.nextCursor ?? "", limit: 2)), options: try fixture.designer())
        XCTAssertEqual(page2.payments.count, 1)
        XCTAssertTrue((page2.page?.nextCursor ?? "").isEmpty)
        XCTAssertEqual(Set((page1.payments + page2.payments).map(\.id)).count, 3)
        XCTAssertEqual(page1.month?.period, "2027-03")
        XCTAssertEqual(page1.month?.receivedKRW, 135_000)
        XCTAssertEqual(page1.month?.refundedKRW, 22_500)
        XCTAssertEqual(page1.month?.netKRW, 112_500)
        XCTAssertEqual(page1.days.map(\.period), ["2027-03-10", "2027-03-11"])
        XCTAssertEqual(page1.days.map(\.netKRW), [135_000, -22_500])
        let february = try await fixture.booking.listPayments(
            .init(year: 2027, month: 2), options: try fixture.designer())
        XCTAssertEqual(february.month?.netKRW, 0)
        let badMonth = await rpcError {
            _ = try await fixture.booking.listPayments(.init(year: 2027, month: 13), options: try fixture.designer())
        }
        XCTAssertEqual(badMonth?.code, .invalidArgument)
        let customerView = try await fixture.payments("customer-1")
        XCTAssertTrue(customerView.days.isEmpty, "a customer gets no statement")
        try await fixture.stop()
    }
}
