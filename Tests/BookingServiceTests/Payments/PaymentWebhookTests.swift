import Foundation
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The provider's webhook: a signed event is recorded and processed through the outbox (the provider is
/// asked about the order), an unsigned, mis-signed or stale one is refused and recorded nowhere.
final class PaymentWebhookTests: XCTestCase {
    private static let secret = "TEST-FIXTURE-NOT-A-REAL-webhook-secret"

    private func post(_ port: Int, _ body: String, signature: String?, time: String?) async throws -> Int {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(PaymentWebhookServer.path)")!)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue("application/json", forHTTPHeaderField: "content-type")
        if let signature { request.setValue(signature, forHTTPHeaderField: WebhookSignature.signatureHeader) }
        if let time { request.setValue(time, forHTTPHeaderField: WebhookSignature.timeHeader) }
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    func testPaymentWebhookRecordsSignedEventsAndSettlesThroughTheOutbox() async throws {
        let port = try ServiceHarness.unusedPort()
        let fixture = try await BookingFixture.start(
            payments: PaymentSettings(webhookPort: port, webhookSecret: .value(Secret(Self.secret))))
        let payment = try await fixture.prepare(try await fixture.reserve())
        // The answer is lost, the provider did charge: the webhook tells before reconciliation would.
        _ = await statusCode { _ = try await fixture.confirm(payment, key: "dev_timeout_hook") }
        let body = """
            {"eventType":"PAYMENT_STATUS_CHANGED","createdAt":"2027-03-10T08:00:01.000000",
             "data":{"paymentKey":"dev_timeout_hook","orderId":"\(payment.orderID)","status":"DONE"}}
            """
        let now = String(BookingFixture.ms(fixture.clock.now) / 1_000)
        let key = Secret(Self.secret)
        let signed = WebhookSignature.sign(body: Array(body.utf8), time: now, key: key)

        let unsigned = try await post(port, body, signature: nil, time: nil)
        let forged = try await post(
            port, body, signature: WebhookSignature.sign(body: Array(body.utf8), time: now, key: Secret("guess")),
            time: now)
        let tampered = try await post(
            port, body.replacingOccurrences(of: "DONE", with: "CANCELED"), signature: signed, time: now)
        let stale = try await post(port, body, signature: signed, time: String(Int64(now)! - 600))
        // Times that would overflow milliseconds arithmetic are refused like any stale one, and the
        // service keeps serving.
        var extremes: [Int] = []
        for time in [String(Int64.max), String(Int64.min), "-1", "99999999999999999999"] {
            extremes.append(try await post(port, body, signature: signed, time: time))
        }
        XCTAssertEqual(extremes, [401, 401, 401, 401])
        XCTAssertEqual([unsigned, forged, tampered, stale], [401, 401, 401, 401])
        let tooLarge = try await post(
            port, String(repeating: "x", count: PaymentWebhookServer.maxBodyBytes + 1), signature: signed, time: now)
        XCTAssertEqual(tooLarge, 413)
        let refusedEvents = try await fixture.count("SELECT COUNT(*) FROM payment_event")
        XCTAssertEqual(refusedEvents, 0, "refused deliveries are recorded nowhere")

        let accepted = try await post(port, body, signature: signed, time: now)
        let again = try await post(port, body, signature: signed, time: now)
        XCTAssertEqual([accepted, again], [200, 200])
        let events = try await fixture.count("SELECT COUNT(*) FROM payment_event")
        XCTAssertEqual(events, 1, "a redelivery is recorded once")
        try await fixture.settle("the event's processing") {
            try await fixture.payments("customer-1").payments.first?.status == .paid
        }
        let processed = try await fixture.count("SELECT COUNT(*) FROM payment_event WHERE processed_at_ms IS NOT NULL")
        XCTAssertEqual(processed, 1)
        let ledger = try await fixture.checkLedger()
        XCTAssertTrue(ledger.balanced, "\(ledger.problems)")
        XCTAssertEqual(ledger.netKRW, 45_000)
        let notJSON = try await post(
            port, "hello", signature: WebhookSignature.sign(body: Array("hello".utf8), time: now, key: key), time: now)
        XCTAssertEqual(notJSON, 400)
        try await fixture.stop()
    }
}
