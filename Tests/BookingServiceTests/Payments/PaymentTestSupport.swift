import Foundation
import GRDB
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// What the payment tests do over and over on a `BookingFixture`: book a slot, prepare and confirm,
/// read the development provider's records and the operators' ledger check.
extension BookingFixture {
    typealias Booking = YediBooking.BookingService.Client

    /// A reservation of designer-1's first style (45,000 KRW) on 2027-03-11 at `hour` in Seoul.
    func reserve(_ customer: String = "customer-1", hour: Int = 10, day: Int = 11) async throws
        -> YediBooking.Reservation
    {
        if try await store.schedule(designerID: "designer-1") == nil { try await addDesigner("designer-1") }
        let style = try await booking.getMenu(.init(designerID: "designer-1")).styles[0].id
        return try await booking.createReservation(
            .init(
                designerID: "designer-1", startAtMs: Self.ms(Self.seoul(2027, 3, day, hour: hour)), styleIDs: [style]),
            options: try self.customer(customer))
    }

    func prepare(_ reservation: YediBooking.Reservation, as customer: String = "customer-1") async throws
        -> YediBooking.Payment
    {
        try await booking.preparePayment(.init(reservationID: reservation.id), options: try self.customer(customer))
    }

    func confirm(
        _ payment: YediBooking.Payment, key: String = "dev_ok_1", amount: Int64? = nil,
        as customer: String = "customer-1"
    ) async throws -> YediBooking.Payment {
        var options = try self.customer(customer)
        options.timeout = .seconds(30)
        return try await booking.confirmPayment(
            .init(orderID: payment.orderID, paymentKey: key, amountKRW: amount ?? payment.amountKRW), options: options)
    }

    /// What the development provider (its files in the service's data folder) has seen of `orderID`.
    func providerRecord(_ orderID: String) -> DevelopmentPaymentRecord? {
        DevelopmentPaymentProvider(folder: service.environment.dataDirectory.appendingPathComponent("dev-payments"))
            .records().first { $0.orderID == orderID }
    }

    /// `CheckPaymentLedger` as the operators call it (their service certificate).
    func checkLedger(askProvider: Bool = true) async throws -> YediBooking.CheckPaymentLedgerResponse {
        let (booking, client, task) = try await serviceClient("operator")
        defer {
            client.beginGracefulShutdown()
            task.cancel()
        }
        return try await booking.checkPaymentLedger(.init(askProvider: askProvider))
    }

    func payments(_ user: String, designer: Bool = false) async throws -> YediBooking.ListPaymentsResponse {
        try await booking.listPayments(
            .init(), options: designer ? try self.designer(user) : try self.customer(user))
    }

    /// Polls until `condition` holds (the scheduler and the outbox work in the background).
    func settle(_ what: String, _ condition: () async throws -> Bool) async throws {
        let held = try await eventually(timeout: 20, condition)
        XCTAssertTrue(held, "never happened: \(what)")
    }
}
