import Foundation
import GRDB
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

/// The real BookingService executable dies by SIGKILL between the provider's approval and the commit
/// (the development kill point): the customer was charged, the database still says "confirming". After a
/// restart on the same data folder, reconciliation asks the provider and the payment is paid, the ledger
/// balances, and a retried confirmation charges nothing more.
final class PaymentCrashTests: XCTestCase {
    func testPaymentKilledBetweenTheProviderAndTheCommitIsRepairedByReconciliationOnRestart() async throws {
        let harness = try ServiceHarness()
        let shops = ShopDirectory()
        shops.add("crash-designer")
        let account = try await shops.start(harness)
        let dataDirectory = harness.dataRoot.appendingPathComponent("payment-crash").path
        let first = try await BookingProcess.start(
            harness: harness, dataDirectory: dataDirectory, peers: ["account": account.port],
            arguments: ["--development"], environment: ["YEDI_PAYMENT_KILL_AFTER_CONFIRM": "1"])
        try await withRPCClient(configuration: first.clientConfiguration(identity: "account")) { client in
            _ = try await YediBooking.BookingService.Client(client).setUpDesigner(.init(designerID: "crash-designer"))
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Asia/Seoul")!
        let start = calendar.date(byAdding: .hour, value: 24 + 10, to: calendar.startOfDay(for: Date()))!
        let customer = ServiceHarness.bearer(try harness.token(user: "crash-customer", role: .customer))
        let payment = try await withRPCClient(configuration: first.clientConfiguration()) { client in
            let booking = YediBooking.BookingService.Client(client)
            let style = try await booking.getMenu(.init(designerID: "crash-designer")).styles[0].id
            let reservation = try await booking.createReservation(
                .init(
                    designerID: "crash-designer", startAtMs: Int64(start.timeIntervalSince1970 * 1_000),
                    styleIDs: [style]), options: customer)
            return try await booking.preparePayment(.init(reservationID: reservation.id), options: customer)
        }
        let lost = await rpcError {
            try await withRPCClient(configuration: first.clientConfiguration()) { client in
                _ = try await YediBooking.BookingService.Client(client).confirmPayment(
                    .init(orderID: payment.orderID, paymentKey: "dev_ok_crash", amountKRW: payment.amountKRW),
                    options: customer)
            }
        }
        XCTAssertNotNil(lost, "the process died before answering")
        let exit = first.waitForExit()
        XCTAssertFalse(exit.timedOut, "the kill point ended the process")
        XCTAssertNotEqual(exit.exitCode, 0)

        // The provider charged; the database did not hear of it.
        let provider = DevelopmentPaymentProvider(
            folder: URL(fileURLWithPath: dataDirectory).appendingPathComponent("dev-payments"))
        XCTAssertEqual(provider.records().first { $0.orderID == payment.orderID }?.charges, 1)
        var readOnly = Configuration()
        readOnly.readonly = true
        let stateAfterKill = try await DatabaseQueue(path: dataDirectory + "/booking.sqlite", configuration: readOnly)
            .read { db in try String.fetchOne(db, sql: "SELECT status FROM payment") }
        XCTAssertEqual(stateAfterKill, "confirming")

        let second = try await BookingProcess.start(
            harness: harness, dataDirectory: dataDirectory, peers: ["account": account.port])
        defer { second.stop() }
        try await withRPCClient(configuration: second.clientConfiguration()) { client in
            let booking = YediBooking.BookingService.Client(client)
            let repaired = try await eventually(timeout: 30) {
                try await booking.listPayments(.init(), options: customer).payments.first?.status == .paid
            }
            XCTAssertTrue(repaired, "reconciliation settled the payment after the restart")
            let retried = try await booking.confirmPayment(
                .init(orderID: payment.orderID, paymentKey: "dev_ok_crash", amountKRW: payment.amountKRW),
                options: customer)
            XCTAssertEqual(retried.status, .paid)
            let reservation = try await booking.listReservations(.init(filter: .upcoming), options: customer)
            XCTAssertEqual(reservation.reservations.first?.paymentStatus, .paid)
        }
        try await withRPCClient(configuration: second.clientConfiguration(identity: "operator")) { client in
            let ledger = try await YediBooking.BookingService.Client(client).checkPaymentLedger(
                .init(askProvider: true))
            XCTAssertTrue(ledger.balanced, "\(ledger.problems)")
            XCTAssertEqual(ledger.netKRW, payment.amountKRW)
            XCTAssertEqual(ledger.entries, 2)
        }
        XCTAssertEqual(provider.records().first { $0.orderID == payment.orderID }?.charges, 1, "charged once")
        await account.stop()
    }
}
