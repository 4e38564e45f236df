/// A payment gateway (PG) as BookingService uses it: the common Korean flow of prepare → the customer
/// authorises in the PG's own UI → the server confirms, then cancels (refunds) and queries.
///
/// Why a protocol: the development provider runs the whole flow offline (tests, the README tour), and
/// a real adapter (`TossPaymentsProvider` in OutsideSenders) is chosen by configuration without the
/// service knowing which. Amounts are whole KRW.
public protocol PaymentProvider: Sendable {
    /// "development", "toss": shown on payments and in logs.
    var name: String { get }
    /// What the client needs to open the provider's UI for `order` (no call to the provider: Korean PGs
    /// take the order id and amount from the client's UI and check them at confirmation).
    func prepare(_ order: PaymentOrder) -> PaymentCheckout
    /// Captures the authorised payment. `idempotencyKey` is the same on every retry of one payment, so a
    /// retry (after a timeout, a crash) never charges twice. Throws `PaymentProviderError`.
    func confirm(_ order: PaymentOrder, paymentKey: String, idempotencyKey: String) async throws -> ProviderPayment
    /// Refunds `amountKRW` of a captured payment (all that is left when it equals the balance).
    func cancel(paymentKey: String, amountKRW: Int64, reason: String, idempotencyKey: String) async throws
        -> ProviderPayment
    /// The provider's view of an order; nil when it has never seen it (the confirmation did not reach it).
    func query(orderID: String) async throws -> ProviderPayment?
}

/// What is being paid for: the order id the server made and the amount it fixed.
public struct PaymentOrder: Sendable, Hashable {
    public var orderID: String
    public var amountKRW: Int64
    /// "레이어드컷 외 1건", shown in the provider's UI.
    public var orderName: String

    public init(orderID: String, amountKRW: Int64, orderName: String) {
        self.orderID = orderID
        self.amountKRW = amountKRW
        self.orderName = orderName
    }
}

/// For the client opening the provider's UI (never a secret).
public struct PaymentCheckout: Sendable, Hashable {
    public var hint: String

    public init(hint: String) {
        self.hint = hint
    }
}

/// A payment as the provider reports it.
public struct ProviderPayment: Sendable, Hashable {
    /// The provider's states (Toss's `status`), as far as the server needs them.
    public enum Status: String, Sendable, Hashable, Codable {
        case ready = "READY"
        case inProgress = "IN_PROGRESS"
        case done = "DONE"
        case canceled = "CANCELED"
        case partialCanceled = "PARTIAL_CANCELED"
        case aborted = "ABORTED"
        case expired = "EXPIRED"
    }

    public var paymentKey: String
    public var orderID: String
    public var status: Status
    public var totalAmountKRW: Int64
    /// What stays charged: total minus every cancellation.
    public var balanceAmountKRW: Int64

    public init(paymentKey: String, orderID: String, status: Status, totalAmountKRW: Int64, balanceAmountKRW: Int64) {
        self.paymentKey = paymentKey
        self.orderID = orderID
        self.status = status
        self.totalAmountKRW = totalAmountKRW
        self.balanceAmountKRW = balanceAmountKRW
    }

    /// Whether money was captured (and may be partly or fully refunded since).
    public var wasCaptured: Bool { [.done, .canceled, .partialCanceled].contains(status) }
}

/// How a provider call failed.
public enum PaymentProviderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The provider refused: nothing was charged (or refunded). `code` is the provider's
    /// (`REJECT_CARD_PAYMENT`, `INVALID_CARD_EXPIRATION`, …), `message` its text for the customer.
    case declined(code: String, message: String)
    /// No answer, a timeout or a 5xx: the outcome is unknown, so the payment stays "confirming" and
    /// reconciliation asks the provider later. Never carries a credential.
    case unavailable(String)

    public var description: String {
        switch self {
        case .declined(let code, let message): "declined \(code): \(message)"
        case .unavailable(let reason): "provider unavailable: \(reason)"
        }
    }
}
