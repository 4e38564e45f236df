import RPCCore
import ServiceRuntime
import YediProto

/// Field rules of the payment requests, and the status each refusal of the store becomes: every one
/// names the field, and none leaves anything stored or charged.
enum PaymentRules {
    /// What the provider's UI hands back: 1–200 ASCII letters, digits, '-' and '_' (Toss's keys are
    /// such, at most 200 characters).
    static func paymentKey(_ value: String) throws(RPCError) -> String {
        guard !value.isEmpty else { throw FieldRule.invalid("payment_key", "required") }
        guard value.utf8.count <= 200 else { throw FieldRule.invalid("payment_key", "at most 200 characters") }
        guard value.utf8.allSatisfy({ isKeyByte($0) }) else {
            throw FieldRule.invalid("payment_key", "only letters, digits, '-' and '_'")
        }
        return value
    }

    private static func isKeyByte(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 45 || byte == 95
    }

    static func amount(_ value: Int64) throws(RPCError) -> Int64 {
        guard value > 0, value <= PaymentLifecycle.maximumAmountKRW else {
            throw FieldRule.invalid("amount_krw", "1–\(PaymentLifecycle.maximumAmountKRW) KRW")
        }
        return value
    }

    /// "레이어드컷 외 1건": the first style and how many more, as Korean receipts name an order.
    static func orderName(_ styles: [StyleRecord]) -> String {
        guard let first = styles.first?.name else { return "예약" }
        return styles.count > 1 ? "\(first) 외 \(styles.count - 1)건" : first
    }

    static func status(_ refusal: PaymentStoreError) -> RPCError {
        switch refusal {
        case .reservationNotFound:
            return RPCError(code: .notFound, message: "reservation_id: no such reservation")
        case .notTheCustomer:
            return RPCError(code: .permissionDenied, message: "only the reservation's customer pays for it")
        case .notPayable(let reason):
            return RPCError(code: .failedPrecondition, message: "reservation_id: \(reason)")
        case .alreadyPaid:
            return RPCError(code: .alreadyExists, message: "reservation_id: the reservation is already paid")
        case .orderNotFound:
            return RPCError(code: .notFound, message: "order_id: no such order")
        case .amountMismatch(let expected):
            return RPCError(
                code: .failedPrecondition,
                message: "amount_krw: not the prepared amount (\(expected) KRW); nothing was charged")
        case .holdExpired:
            return RPCError(
                code: .failedPrecondition,
                message: "order_id: the payment's hold expired and the slot was released; nothing was charged")
        case .failed(let code):
            return RPCError(
                code: .failedPrecondition,
                message: "order_id: the payment failed (\(code)); prepare a new payment")
        case .otherPaymentKey:
            return RPCError(
                code: .failedPrecondition, message: "payment_key: the order is being confirmed with another key")
        }
    }

    /// A cancellation's reason and note: a catalogue reason (not the service's own PAYMENT_EXPIRED), and
    /// up to 200 characters of text without control characters (new lines allowed), required with OTHER.
    static func cancellation(_ reason: YediBooking.CancelReason, note: String) throws(RPCError) -> (Int, String) {
        let allowed: [YediBooking.CancelReason] = [
            .unspecified, .scheduleChange, .changedMind, .health, .shopCircumstances, .other,
        ]
        let reason = try FieldRule.choice(
            reason, field: "reason",
            allowed: allowed, names: "SCHEDULE_CHANGE, CHANGED_MIND, HEALTH, SHOP_CIRCUMSTANCES or OTHER")
        let text = try FieldRule.text(note, field: "note", maxCharacters: 200, required: reason == .other)
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\n" })
        else { throw FieldRule.invalid("note", "control characters are not allowed") }
        return (Int(reason.rawValue), text)
    }
}
