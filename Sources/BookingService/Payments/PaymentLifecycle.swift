/// A payment's states as stored (`payment.status`).
enum PaymentState: String, Sendable, CaseIterable, Codable {
    case prepared
    case confirming
    case paid
    case partiallyRefunded = "partially_refunded"
    case refunded
    case expired
    case failed

    /// Holds or may still hold money or the slot: at most one such payment per reservation.
    var isLive: Bool { [.prepared, .confirming, .paid, .partiallyRefunded].contains(self) }
    /// Money was captured (and may be partly or fully refunded since).
    var wasCaptured: Bool { [.paid, .partiallyRefunded, .refunded].contains(self) }
}

/// One stored change of state.
struct PaymentTransitionRecord: Equatable, Sendable {
    var state: PaymentState
    var atMilliseconds: Int64
}

/// What may happen to a payment.
enum PaymentEvent: Hashable, Sendable {
    /// The server starts confirming it with the provider.
    case startConfirming
    /// The provider captured it.
    case approved
    /// The provider refused it (nothing captured).
    case declined
    /// The hold ran out before a confirmation started.
    case holdExpired
    /// The provider refunded this much.
    case refunded(Int64)
}

/// A transition the state machine refuses: a bug or a race lost, never applied half-way.
struct PaymentTransitionError: Error, Equatable, CustomStringConvertible {
    var from: PaymentState
    var event: PaymentEvent
    var problem: String

    var description: String { "payment \(from.rawValue): cannot apply \(event): \(problem)" }
}

/// A payment's life as a value, with no database: prepared → confirming → paid → partially/fully refunded;
/// prepared → expired; confirming → failed. Every transition is kept with its time, and the refunded sum
/// never passes the amount (checked without overflow).
///
/// Why a value type: the rules are tested exhaustively on their own (`PaymentLifecycleTests`), and the
/// store only ever writes what `apply` produced.
struct PaymentLifecycle: Equatable, Sendable {
    /// At most 100,000,000 KRW: far above any salon bill, far below overflow when summed.
    static let maximumAmountKRW: Int64 = 100_000_000

    let amountKRW: Int64
    private(set) var state: PaymentState
    private(set) var refundedKRW: Int64
    private(set) var transitions: [PaymentTransitionRecord]

    /// A new payment of `amountKRW` (1 to `maximumAmountKRW`).
    init(preparing amountKRW: Int64, at milliseconds: Int64) throws(PaymentTransitionError) {
        guard amountKRW > 0, amountKRW <= Self.maximumAmountKRW else {
            throw PaymentTransitionError(
                from: .prepared, event: .startConfirming,
                problem: "amount \(amountKRW) is not 1–\(Self.maximumAmountKRW) KRW")
        }
        self.amountKRW = amountKRW
        self.state = .prepared
        self.refundedKRW = 0
        self.transitions = [PaymentTransitionRecord(state: .prepared, atMilliseconds: milliseconds)]
    }

    /// As stored (the store trusts its own rows, which only `apply` wrote).
    init(stored state: PaymentState, amountKRW: Int64, refundedKRW: Int64, transitions: [PaymentTransitionRecord]) {
        self.amountKRW = amountKRW
        self.state = state
        self.refundedKRW = refundedKRW
        self.transitions = transitions
    }

    /// What is still captured.
    var balanceKRW: Int64 { state.wasCaptured ? amountKRW - refundedKRW : 0 }

    /// Applies `event` or throws without changing anything.
    mutating func apply(_ event: PaymentEvent, at milliseconds: Int64) throws(PaymentTransitionError) {
        let next: PaymentState
        var refunded = refundedKRW
        switch (state, event) {
        case (.prepared, .startConfirming): next = .confirming
        case (.prepared, .holdExpired): next = .expired
        case (.confirming, .approved): next = .paid
        case (.confirming, .declined): next = .failed
        case (.paid, .refunded(let amount)), (.partiallyRefunded, .refunded(let amount)):
            let (sum, overflow) = refundedKRW.addingReportingOverflow(amount)
            guard amount > 0, !overflow, sum <= amountKRW else {
                throw PaymentTransitionError(
                    from: state, event: event, problem: "refund must be 1–\(amountKRW - refundedKRW) KRW")
            }
            refunded = sum
            next = sum == amountKRW ? .refunded : .partiallyRefunded
        default:
            throw PaymentTransitionError(from: state, event: event, problem: "not a transition of this state")
        }
        state = next
        refundedKRW = refunded
        transitions.append(PaymentTransitionRecord(state: next, atMilliseconds: milliseconds))
    }
}
