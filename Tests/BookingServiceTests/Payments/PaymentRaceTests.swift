import Foundation
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// Payments under concurrency: a confirmation retried at once charges once, and two customers after one
/// slot end with one payment and a clear status for each.
final class PaymentRaceTests: XCTestCase {
    private typealias F = BookingFixture

    func testPaymentConfirmRetried20TimesConcurrentlyChargesOnce() async throws {
        let fixture = try await BookingFixture.start()
        let payment = try await fixture.prepare(try await fixture.reserve())
        // dev_slow_: the provider takes 2 s, so every retry arrives while the first is in flight.
        let answers = await withTaskGroup(of: Result<YediBooking.Payment, RPCError>.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    do {
                        return .success(try await fixture.confirm(payment, key: "dev_slow_retry"))
                    } catch let error as RPCError {
                        return .failure(error)
                    } catch {
                        return .failure(RPCError(code: .unknown, message: "\(error)"))
                    }
                }
            }
            var answers: [Result<YediBooking.Payment, RPCError>] = []
            for await answer in group { answers.append(answer) }
            return answers
        }
        let paid = answers.compactMap { try? $0.get() }
        XCTAssertEqual(paid.count, 20, "every retry answers the payment: \(answers)")
        XCTAssertEqual(Set(paid.map(\.id)), [payment.id])
        XCTAssertEqual(Set(paid.map(\.status)), [.paid])
        let record = fixture.providerRecord(payment.orderID)
        // The development provider never charges an order twice by itself, so "charged once" is not the
        // server's doing; one confirmation call, keyed by the payment, is.
        XCTAssertEqual(record?.confirmCalls, 1, "the 20 retries shared one provider call")
        XCTAssertEqual(record?.approvedBy, payment.id, "keyed by the payment, so a retry after a crash is the same")
        XCTAssertEqual(record?.charges, 1, "charged once")
        XCTAssertEqual(record?.balanceAmountKRW, 45_000)
        let ledger = try await fixture.checkLedger()
        XCTAssertEqual(ledger.entries, 2, "one capture pair")
        XCTAssertTrue(ledger.balanced, "\(ledger.problems)")
        let transitions = try await fixture.count(
            "SELECT COUNT(*) FROM payment_transition WHERE payment_id = '\(payment.id)'")
        XCTAssertEqual(transitions, 3, "prepared, confirming, paid: once each")
        try await fixture.stop()
    }

    func testPaymentTwoCustomersForOneSlotOneWinsAndBothSeeAClearStatus() async throws {
        let fixture = try await BookingFixture.start()
        _ = try await fixture.reserve("customer-0", hour: 9)  // sets the designer up
        // Both reserve at once: the slot's cells let one through.
        async let first = statusCode { _ = try await fixture.reserve("customer-a", hour: 15) }
        async let second = statusCode { _ = try await fixture.reserve("customer-b", hour: 15) }
        let codes = await [first, second]
        XCTAssertEqual(codes.filter { $0 == .ok }.count, 1, "\(codes)")
        XCTAssertEqual(codes.filter { $0 == .alreadyExists }.count, 1, "\(codes)")
        let winner = codes[0] == .ok ? "customer-a" : "customer-b"
        let loser = winner == "customer-a" ? "customer-b" : "customer-a"

        // The winner prepares but lets the hold run out: the slot is released, the loser books and pays.
        let held = try await fixture.booking.listReservations(
            .init(filter: .upcoming), options: try fixture.customer(winner))
        let lapsed = try await fixture.prepare(try XCTUnwrap(held.reservations.first), as: winner)
        fixture.clock.advance(by: 601)
        try await fixture.settle("the hold's release") {
            try await fixture.store.reservation(id: lapsed.reservationID)?.status == .cancelled
        }
        let taken = try await fixture.reserve(loser, hour: 15)
        let paid = try await fixture.confirm(try await fixture.prepare(taken, as: loser), as: loser)
        XCTAssertEqual(paid.status, .paid)
        // The winner's late confirmation is refused and never reaches the provider.
        let late = await rpcError { _ = try await fixture.confirm(lapsed, as: winner) }
        XCTAssertEqual(late?.code, .failedPrecondition)
        XCTAssertNil(fixture.providerRecord(lapsed.orderID))
        let winnerSees = try await fixture.payments(winner).payments.map(\.status)
        let loserSees = try await fixture.payments(loser).payments.map(\.status)
        XCTAssertEqual(winnerSees, [.expired])
        XCTAssertEqual(loserSees, [.paid])
        let ledger = try await fixture.checkLedger()
        XCTAssertTrue(ledger.balanced)
        XCTAssertEqual(ledger.netKRW, 45_000)
        try await fixture.stop()
    }

    /// The hold runs out while the provider is capturing: the slot stays the customer's (the hold is
    /// looked at again later), the capture makes it paid, and nobody else can book it meanwhile.
    func testPaymentHoldExpiringWhileAConfirmationIsInFlightKeepsTheSlot() async throws {
        let fixture = try await BookingFixture.start()
        let reservation = try await fixture.reserve()
        let payment = try await fixture.prepare(reservation)
        let confirming = Task { try await fixture.confirm(payment, key: "dev_slow_deadline") }
        try await fixture.settle("confirming") {
            try await fixture.payments("customer-1").payments.first?.status == .confirming
        }
        fixture.clock.advance(by: 601)  // past the hold while the provider answers
        try await Task.sleep(for: .milliseconds(300))
        let meanwhile = try await fixture.store.reservation(id: reservation.id)
        XCTAssertEqual(meanwhile?.status, .confirmed, "a confirmation in flight keeps the slot")
        let rival = await statusCode { _ = try await fixture.reserve("customer-2") }
        XCTAssertEqual(rival, .alreadyExists, "the slot is not free meanwhile")
        let paid = try await confirming.value
        XCTAssertEqual(paid.status, .paid)
        fixture.clock.advance(by: 120)  // the hold's second look finds it paid
        try await Task.sleep(for: .milliseconds(300))
        let after = try await fixture.store.reservation(id: reservation.id)
        XCTAssertEqual(after?.status, .confirmed)
        XCTAssertEqual(after?.paymentState, .paid)
        let ledger = try await fixture.checkLedger()
        XCTAssertTrue(ledger.balanced, "\(ledger.problems)")
        XCTAssertEqual(ledger.netKRW, 45_000)
        try await fixture.stop()
    }

    func testPaymentCapturedAfterItsReservationWasCancelledIsRefundedAtOnce() async throws {
        let fixture = try await BookingFixture.start()
        let reservation = try await fixture.reserve()
        let payment = try await fixture.prepare(reservation)
        let confirming = Task { try await fixture.confirm(payment, key: "dev_slow_late") }
        try await fixture.settle("confirming") {
            try await fixture.payments("customer-1").payments.first?.status == .confirming
        }
        // The designer cancels while the provider is still capturing.
        _ = try await fixture.booking.cancelReservation(
            .init(reservationID: reservation.id, reason: .shopCircumstances), options: try fixture.designer())
        let answer = await rpcError { _ = try await confirming.value }
        XCTAssertEqual(answer?.code, .aborted)
        XCTAssertTrue(answer?.message.contains("refunded in full") ?? false, "\(String(describing: answer))")
        try await fixture.settle("the refund") {
            try await fixture.payments("customer-1").payments.first?.status == .refunded
        }
        let record = fixture.providerRecord(payment.orderID)
        XCTAssertEqual(record?.charges, 1)
        XCTAssertEqual(record?.balanceAmountKRW, 0, "nothing stays charged")
        let ledger = try await fixture.checkLedger()
        XCTAssertTrue(ledger.balanced, "\(ledger.problems)")
        XCTAssertEqual(ledger.entries, 4)
        XCTAssertEqual(ledger.netKRW, 0)
        try await fixture.stop()
    }
}
