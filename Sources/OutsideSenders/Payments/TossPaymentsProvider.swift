import AsyncHTTPClient
import Foundation
import Logging
import ServiceRuntime

/// Toss Payments' core API v1 (https://docs.tosspayments.com/reference): `POST /v1/payments/confirm`,
/// `POST /v1/payments/{paymentKey}/cancel`, `GET /v1/payments/orders/{orderId}`, the secret key as HTTP
/// basic auth (`base64(secretKey + ":")`) and an `Idempotency-Key` header on every write, so a retry after
/// a timeout or a crash gets the first answer instead of a second charge or refund.
///
/// Answers: 2xx is a Payment object (`status`, `totalAmount`, `balanceAmount`); a 4xx is a refusal
/// (`{"code", "message"}`, nothing charged) → `.declined`; a 5xx, 408, 429, a timeout or no connection
/// leaves the outcome unknown → `.unavailable`, and reconciliation asks again with `query`. The key goes
/// only into the request's header; nothing here logs a header or a body.
public struct TossPaymentsProvider: PaymentProvider {
    public static let provider = "toss"
    public let name = TossPaymentsProvider.provider

    private let client: ProviderClient
    private let secretKey: SecretSource
    private let clientKey: String

    public init(
        url: String, secretKey: SecretSource, clientKey: String,
        settings: ProviderHTTPSettings = ProviderHTTPSettings(), http: HTTPClient = .shared
    ) {
        self.client = ProviderClient(provider: Self.provider, baseURL: url, settings: settings, http: http)
        self.secretKey = secretKey
        self.clientKey = clientKey
    }

    public func prepare(_ order: PaymentOrder) -> PaymentCheckout {
        PaymentCheckout(hint: "toss client key \(clientKey)")
    }

    public func confirm(_ order: PaymentOrder, paymentKey: String, idempotencyKey: String) async throws
        -> ProviderPayment
    {
        let body: [String: Any] = ["paymentKey": paymentKey, "orderId": order.orderID, "amount": order.amountKRW]
        return try Self.payment(
            from: try await post("/v1/payments/confirm", body: body, idempotencyKey: idempotencyKey))
    }

    public func cancel(paymentKey: String, amountKRW: Int64, reason: String, idempotencyKey: String) async throws
        -> ProviderPayment
    {
        let body: [String: Any] = ["cancelReason": reason, "cancelAmount": amountKRW]
        return try Self.payment(
            from: try await post(
                "/v1/payments/\(Self.pathSegment(paymentKey))/cancel", body: body, idempotencyKey: idempotencyKey))
    }

    public func query(orderID: String) async throws -> ProviderPayment? {
        let response: ProviderResponse
        do {
            response = try await client.get(
                path: "/v1/payments/orders/\(Self.pathSegment(orderID))", headers: [try authorization()])
        } catch let noAnswer as RetryableSendError {
            throw PaymentProviderError.unavailable(noAnswer.code)
        }
        if response.status == 404 { return nil }
        return try Self.payment(from: response)
    }

    private func post(_ path: String, body: [String: Any], idempotencyKey: String) async throws -> ProviderResponse {
        do {
            return try await client.postJSON(
                path: path, headers: [try authorization(), ("idempotency-key", idempotencyKey)],
                body: try [UInt8](JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])))
        } catch let noAnswer as RetryableSendError {
            throw PaymentProviderError.unavailable(noAnswer.code)
        }
    }

    private func authorization() throws -> (String, String) {
        ("authorization", "Basic " + Data((try secretKey.read().value + ":").utf8).base64EncodedString())
    }

    /// The Payment object of a 2xx answer; a refusal or an unknown outcome otherwise.
    static func payment(from response: ProviderResponse) throws -> ProviderPayment {
        let json = response.json
        guard response.isSuccess else {
            let code = json?["code"] as? String ?? "HTTP_\(response.status)"
            let message = json?["message"] as? String ?? ""
            // Only a refusal documented as final means nothing was (or will be) done; any other answer —
            // a conflict on an idempotency key still in progress, a credentials problem, a code this
            // adapter does not know — leaves the outcome unknown, for reconciliation to settle.
            guard (400..<500).contains(response.status), Self.finalRefusals.contains(code) else {
                throw PaymentProviderError.unavailable("HTTP \(response.status) \(code)")
            }
            throw PaymentProviderError.declined(code: code, message: String(message.prefix(300)))
        }
        guard let json, let key = json["paymentKey"] as? String, let orderID = json["orderId"] as? String,
            let status = (json["status"] as? String).flatMap(ProviderPayment.Status.init(rawValue:)),
            let total = (json["totalAmount"] as? NSNumber)?.int64Value,
            let balance = (json["balanceAmount"] as? NSNumber)?.int64Value
        else { throw PaymentProviderError.unavailable("an answer that is not a Payment object") }
        return ProviderPayment(
            paymentKey: key, orderID: orderID, status: status, totalAmountKRW: total, balanceAmountKRW: balance)
    }

    /// Toss's error codes that are final answers to a confirm or a cancel (its error-code reference): the card
    /// or the request was refused, or the payment is already in the state asked for.
    static let finalRefusals: Set<String> = [
        "ALREADY_PROCESSED_PAYMENT", "ALREADY_CANCELED_PAYMENT", "NOT_CANCELABLE_AMOUNT", "NOT_CANCELABLE_PAYMENT",
        "REJECT_CARD_PAYMENT", "REJECT_CARD_COMPANY", "REJECT_ACCOUNT_PAYMENT", "INVALID_CARD_EXPIRATION",
        "INVALID_STOPPED_CARD", "INVALID_CARD_LOST_OR_STOLEN", "INVALID_CARD_NUMBER", "INVALID_REJECT_CARD",
        "INVALID_PASSWORD", "INVALID_CARD_INSTALLMENT_PLAN", "EXCEED_MAX_DAILY_PAYMENT_COUNT",
        "EXCEED_MAX_PAYMENT_AMOUNT", "EXCEED_MAX_AMOUNT", "EXCEED_MAX_CARD_INSTALLMENT_PLAN", "BELOW_MINIMUM_AMOUNT",
        "NOT_AVAILABLE_PAYMENT", "NOT_SUPPORTED_INSTALLMENT_PLAN_CARD_OR_MERCHANT", "NOT_FOUND_PAYMENT_SESSION",
        "NOT_FOUND_PAYMENT", "INVALID_REQUEST", "INVALID_AMOUNT", "UNAPPROVED_ORDER_ID",
    ]

    private static func pathSegment(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_"))) ?? ""
    }
}
