import ServiceRuntime

/// A payment as stored: its order, its parties, its life (`PaymentLifecycle`) and its refunds.
struct PaymentRecord: Equatable, Sendable {
    var id: String
    var orderID: String
    var reservationID: String
    /// "" once the customer's account was deleted (the record is kept for accounting).
    var customerID: String
    var designerID: String
    var orderName: String
    var provider: String
    var paymentKey: String?
    var lifecycle: PaymentLifecycle
    var createdAtMilliseconds: Int64
    var holdUntilMilliseconds: Int64
    var paidAtMilliseconds: Int64?
    var failureCode: String?
    var failureMessage: String?
    var refunds: [RefundRecord] = []

    var state: PaymentState { lifecycle.state }
    var amountKRW: Int64 { lifecycle.amountKRW }
    var order: PaymentOrder { PaymentOrder(orderID: orderID, amountKRW: amountKRW, orderName: orderName) }
}

enum RefundState: String, Sendable {
    /// Recorded with the cancellation; the outbox confirms it with the provider.
    case requested
    case done
}

struct RefundRecord: Equatable, Sendable {
    var id: String
    var paymentID: String
    var amountKRW: Int64
    var state: RefundState
    var reason: String
    var requestedAtMilliseconds: Int64
    var doneAtMilliseconds: Int64?
}

/// Who cancels a reservation, and why (`yedi.booking.CancelReason` raw values, a note shown to the other
/// party).
struct Cancellation: Sendable {
    enum Party: Int, Sendable {
        case customer = 1
        case designer = 2
        case service = 3
    }

    var by: Party
    var reason: Int
    var note: String
    var atMilliseconds: Int64
}

/// Why a payment request is refused; the handlers turn each into a status naming the field.
enum PaymentStoreError: Error, Equatable {
    case reservationNotFound
    case notTheCustomer
    case notPayable(String)
    case alreadyPaid
    case orderNotFound
    case amountMismatch(expected: Int64)
    case holdExpired
    case failed(code: String)
    case otherPaymentKey
}

/// What `beginConfirming` decided.
enum ConfirmStart: Equatable, Sendable {
    /// Ask the provider (first time, or a retry of a confirmation whose answer is not stored yet).
    case askProvider(PaymentRecord)
    /// Already settled with this payment key: answer it, charge nothing.
    case settled(PaymentRecord)
}

/// What a provider's approval came to.
enum SettleOutcome: Equatable, Sendable {
    case paid(PaymentRecord)
    /// Captured, but the reservation was cancelled meanwhile (a designer, an expired hold, a deleted
    /// account): refunded in full at once, through this refund.
    case refundAtOnce(PaymentRecord, RefundRecord)
    /// Settled before (a concurrent retry, reconciliation).
    case unchanged(PaymentRecord)
}

/// A day's or a month's money for a designer, from the ledger.
struct LedgerMovement: Equatable, Sendable {
    var atMilliseconds: Int64
    /// Positive: received (a capture); negative: refunded.
    var amountKRW: Int64
}

extension PaymentRecord {
    /// What a confirmation answers when this payment is no longer prepared (a retry, or one too late),
    /// the same on every engine; nil for a prepared payment, whose confirmation the store starts.
    func answerToLaterConfirmation(paymentKey: String, amountKRW: Int64) throws -> ConfirmStart? {
        switch state {
        case .prepared:
            return nil
        case .confirming:
            guard self.paymentKey == paymentKey else { throw PaymentStoreError.otherPaymentKey }
            guard amountKRW == self.amountKRW else { throw PaymentStoreError.amountMismatch(expected: self.amountKRW) }
            return .askProvider(self)
        case .paid, .partiallyRefunded, .refunded:
            guard self.paymentKey == paymentKey, amountKRW == self.amountKRW else {
                throw PaymentStoreError.alreadyPaid
            }
            return .settled(self)
        case .expired:
            throw PaymentStoreError.holdExpired
        case .failed:
            throw PaymentStoreError.failed(code: failureCode ?? "")
        }
    }
}
