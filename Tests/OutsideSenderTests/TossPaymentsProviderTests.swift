import Foundation
import HTTPTestSupport
import OutsideSenders
import ServiceRuntime
import XCTest

extension FixtureSecrets {
    static let tossSecretKey = "TEST-FIXTURE-NOT-A-REAL-toss-secret"
}

/// The Toss Payments adapter against the fake HTTP server replaying the documented answers: the request
/// each call sends (path, basic auth, idempotency key, body), approvals, refusals, 5xx and timeouts as an
/// unknown outcome, and the secret kept out of every error.
final class TossPaymentsProviderTests: XCTestCase {
    private let order = PaymentOrder(orderID: "yedi-01order", amountKRW: 45_000, orderName: "레이어드컷")

    /// A Payment object as Toss documents it (abridged to the fields the adapter reads, plus a few it ignores).
    private static func payment(status: String, total: Int = 45_000, balance: Int = 45_000) -> String {
        """
        {"mId":"tosspayments","version":"2022-11-16","paymentKey":"tgen_20240213121757MJo50","type":"NORMAL",
         "orderId":"yedi-01order","orderName":"레이어드컷","currency":"KRW","method":"카드",
         "totalAmount":\(total),"balanceAmount":\(balance),"status":"\(status)",
         "requestedAt":"2024-02-13T12:17:57+09:00","approvedAt":"2024-02-13T12:18:14+09:00",
         "suppliedAmount":40909,"vat":4091,"cancels":null}
        """
    }

    private func provider(_ server: FakeHTTPServer, settings: ProviderHTTPSettings = ProviderHTTPSettings())
        -> TossPaymentsProvider
    {
        TossPaymentsProvider(
            url: server.baseURL, secretKey: .value(Secret(FixtureSecrets.tossSecretKey)), clientKey: "test_ck_1",
            settings: settings)
    }

    func testPaymentTossConfirmSendsTheDocumentedRequest() async throws {
        try await withFakeServer(replying: .respond(status: 200, body: Self.payment(status: "DONE"))) { server in
            let answer = try await provider(server).confirm(
                order, paymentKey: "tgen_20240213121757MJo50", idempotencyKey: "payment-01")
            XCTAssertEqual(answer.status, .done)
            XCTAssertEqual(answer.totalAmountKRW, 45_000)
            XCTAssertEqual(answer.balanceAmountKRW, 45_000)
            let request = try XCTUnwrap(server.requests.first)
            XCTAssertEqual(request.method, "POST")
            XCTAssertEqual(request.path, "/v1/payments/confirm")
            XCTAssertEqual(
                request.header("authorization"),
                "Basic " + Data((FixtureSecrets.tossSecretKey + ":").utf8).base64EncodedString())
            XCTAssertEqual(request.header("idempotency-key"), "payment-01")
            XCTAssertTrue(request.header("content-type")?.hasPrefix("application/json") ?? false)
            let body = try json(request)
            XCTAssertEqual(body["paymentKey"] as? String, "tgen_20240213121757MJo50")
            XCTAssertEqual(body["orderId"] as? String, "yedi-01order")
            XCTAssertEqual(body["amount"] as? Int, 45_000)
        }
    }

    func testPaymentTossRefusalIsADecline() async throws {
        let refusal = #"{"code":"REJECT_CARD_PAYMENT","message":"한도초과 혹은 잔액부족으로 결제에 실패했습니다."}"#
        try await withFakeServer(replying: .respond(status: 403, body: refusal)) { server in
            let error = await thrownError {
                _ = try await self.provider(server).confirm(self.order, paymentKey: "k", idempotencyKey: "p")
            }
            XCTAssertEqual(
                error as? PaymentProviderError,
                .declined(code: "REJECT_CARD_PAYMENT", message: "한도초과 혹은 잔액부족으로 결제에 실패했습니다."))
        }
    }

    func testPaymentToss5xxAndTimeoutsLeaveTheOutcomeUnknown() async throws {
        let internalError = #"{"code":"FAILED_INTERNAL_SYSTEM_PROCESSING","message":"내부 시스템 처리 작업이 실패했습니다."}"#
        for (reply, settings) in [
            (FakeHTTPServer.Reply.respond(status: 500, body: internalError), ProviderHTTPSettings()),
            (.respond(status: 429, body: #"{"code":"TOO_MANY_REQUESTS","message":"..."}"#), ProviderHTTPSettings()),
            (.respond(status: 200, body: "<html>proxy</html>", contentType: "text/html"), ProviderHTTPSettings()),
            (.noAnswer, shortTimeout),
        ] {
            try await withFakeServer(replying: reply) { server in
                let error = await thrownError {
                    _ = try await self.provider(server, settings: settings).confirm(
                        self.order, paymentKey: "k", idempotencyKey: "p")
                }
                guard case .unavailable(let reason) = error as? PaymentProviderError else {
                    return XCTFail("\(reply): \(String(describing: error))")
                }
                XCTAssertFalse("\(reason)".contains(FixtureSecrets.tossSecretKey))
            }
        }
    }

    func testPaymentTossCancelAndQuery() async throws {
        let answer: @Sendable (FakeHTTPServer.Request) -> FakeHTTPServer.Reply = { request in
            switch (request.method, request.path) {
            case ("POST", "/v1/payments/tgen_20240213121757MJo50/cancel"):
                return .respond(status: 200, body: Self.payment(status: "PARTIAL_CANCELED", balance: 22_500))
            case ("GET", "/v1/payments/orders/yedi-01order"):
                return .respond(status: 200, body: Self.payment(status: "DONE"))
            default:
                return .respond(
                    status: 404, body: #"{"code":"NOT_FOUND_PAYMENT","message":"존재하지 않는 결제 정보 입니다."}"#)
            }
        }
        try await withFakeServer(answering: answer) { server in
            let provider = provider(server)
            let cancelled = try await provider.cancel(
                paymentKey: "tgen_20240213121757MJo50", amountKRW: 22_500, reason: "policy: 50%",
                idempotencyKey: "refund-1")
            XCTAssertEqual(cancelled.status, .partialCanceled)
            XCTAssertEqual(cancelled.balanceAmountKRW, 22_500)
            let cancelRequest = try XCTUnwrap(server.requests.first)
            XCTAssertEqual(cancelRequest.header("idempotency-key"), "refund-1")
            let body = try json(cancelRequest)
            XCTAssertEqual(body["cancelAmount"] as? Int, 22_500)
            XCTAssertEqual(body["cancelReason"] as? String, "policy: 50%")
            let found = try await provider.query(orderID: "yedi-01order")
            XCTAssertEqual(found?.status, .done)
            XCTAssertEqual(server.requests.last?.method, "GET")
            XCTAssertNotNil(server.requests.last?.header("authorization"))
            let unknown = try await provider.query(orderID: "yedi-never-confirmed")
            XCTAssertNil(unknown, "404: the provider never saw the order")
        }
    }

    func testPaymentTossIsChosenByConfigurationWithTheSecretFromTheEnvironment() throws {
        var options = try ServiceOptions.parse([])
        options.paymentApiUrl = "https://api.tosspayments.com"
        options.paymentClientKey = "test_ck_1"
        options.pki = "/nonexistent"
        let defaults = ServiceDefaults(name: "booking", port: 7003, metricsPort: 9103)
        let configuration = try ServiceConfiguration.resolve(
            options: options, environment: ["YEDI_PAYMENT_SECRET_KEY": FixtureSecrets.tossSecretKey],
            defaults: defaults)
        let toss = try XCTUnwrap(configuration.payments.toss)
        XCTAssertEqual(toss.url, "https://api.tosspayments.com")
        XCTAssertEqual(try toss.secretKey.read().value, FixtureSecrets.tossSecretKey)
        XCTAssertFalse("\(configuration)".contains(FixtureSecrets.tossSecretKey), "the key never prints")
        options.paymentClientKey = nil
        XCTAssertThrowsError(
            try ServiceConfiguration.resolve(
                options: options, environment: ["YEDI_PAYMENT_SECRET_KEY": "x"], defaults: defaults)
        ) { error in
            XCTAssertTrue("\(error)".contains("payment-client-key"), "\(error)")
        }
        options.paymentClientKey = "test_ck_1"
        XCTAssertThrowsError(
            try ServiceConfiguration.resolve(options: options, environment: [:], defaults: defaults),
            "no secret key: refused at start")
    }
}
