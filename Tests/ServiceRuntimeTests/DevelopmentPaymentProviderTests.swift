import Foundation
import ServiceRuntime
import XCTest

/// The development gateway as a service's replicas use it: every replica's provider on one folder is
/// one gateway (`--dev-payments-folder`), each answer read from the order's file, never from a replica's
/// memory of it.
final class DevelopmentPaymentProviderTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("dev-payments-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: folder)
    }

    func testProvidersSharingAFolderAreOneGateway() async throws {
        let first = DevelopmentPaymentProvider(folder: folder)
        let second = DevelopmentPaymentProvider(folder: folder)
        let order = PaymentOrder(orderID: "yedi-order-1", amountKRW: 45_000, orderName: "펌")
        let paid = try await first.confirm(order, paymentKey: "dev_ok_1", idempotencyKey: "confirm-1")
        XCTAssertEqual(paid.status, .done)
        // The other replica knows the order the first one confirmed, and refunds it.
        let known = try await second.query(orderID: order.orderID)
        XCTAssertEqual(known?.status, .done, "the second replica's provider does not know the order")
        let refunded = try await second.cancel(
            paymentKey: "dev_ok_1", amountKRW: 45_000, reason: "test", idempotencyKey: "cancel-1")
        XCTAssertEqual(refunded.status, .canceled)
        // The first replica, which confirmed it, sees the refund (not its own memory of the order).
        let seen = try await first.query(orderID: order.orderID)
        XCTAssertEqual(seen?.status, .canceled)
        XCTAssertEqual(first.records().map(\.orderID), [order.orderID])
        XCTAssertEqual(first.records().first?.balanceAmountKRW, 0)
        // A repeated confirmation through the other replica answers the first result, charging nothing.
        let again = try await second.confirm(order, paymentKey: "dev_ok_1", idempotencyKey: "confirm-1")
        XCTAssertEqual(again.totalAmountKRW, 45_000)
        XCTAssertEqual(second.records().first?.charges, 1)
    }

    /// Two replicas refunding one order at once, 100 partial refunds split between them: each one counts
    /// (the folder's lock serializes them; without it, reads and writes interleaved and refunds were lost).
    func testProvidersSharingAFolderChangeOneOrderOneAtATime() async throws {
        let providers = [DevelopmentPaymentProvider(folder: folder), DevelopmentPaymentProvider(folder: folder)]
        let order = PaymentOrder(orderID: "yedi-order-2", amountKRW: 10_000, orderName: "컷")
        _ = try await providers[0].confirm(order, paymentKey: "dev_ok_2", idempotencyKey: "confirm-2")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<100 {
                let provider = providers[index % 2]
                group.addTask {
                    _ = try await provider.cancel(
                        paymentKey: "dev_ok_2", amountKRW: 50, reason: "part", idempotencyKey: "cancel-\(index)")
                }
            }
            try await group.waitForAll()
        }
        let record = try XCTUnwrap(providers[1].records().first { $0.orderID == order.orderID })
        XCTAssertEqual(record.balanceAmountKRW, 5_000, "every refund of 50 taken from the balance")
        XCTAssertEqual(Set(record.cancelKeys).count, 100)
        XCTAssertEqual(record.status, .partialCanceled)
    }

    func testTheFolderIsAnOption() throws {
        let configuration = try ServiceConfiguration.resolve(
            options: try ServiceOptions.parse(["--dev-payments-folder", folder.path]), environment: [:],
            defaults: ServiceDefaults(name: "booking", port: 0, metricsPort: 0))
        XCTAssertEqual(configuration.payments.developmentFolder, folder.path)
        let fromVariable = try ServiceConfiguration.resolve(
            options: try ServiceOptions.parse([]), environment: ["YEDI_DEV_PAYMENTS_FOLDER": "/srv/dev-payments"],
            defaults: ServiceDefaults(name: "booking", port: 0, metricsPort: 0))
        XCTAssertEqual(fromVariable.payments.developmentFolder, "/srv/dev-payments")
        let unset = try ServiceConfiguration.resolve(
            options: try ServiceOptions.parse([]), environment: [:],
            defaults: ServiceDefaults(name: "booking", port: 0, metricsPort: 0))
        XCTAssertNil(unset.payments.developmentFolder, "unset: <data>/dev-payments")
    }
}
