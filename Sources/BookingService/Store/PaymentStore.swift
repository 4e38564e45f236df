import ServiceRuntime

/// What BookingService keeps about payments, behind a protocol as `BookingStore` is (its contract suite
/// is `PaymentStoreContract`). Every method is one transaction: a payment's state, its reservation's
/// slot, its ledger entries and the jobs that follow it (the hold's release, reconciliation, a refund to
/// confirm with the provider) change together or not at all.
protocol PaymentStore: Sendable {
    // MARK: Refund policies

    /// The designer's policy, or `RefundPolicy.standard`.
    func refundPolicy(designerID: String) async throws -> RefundPolicy
    func setRefundPolicy(_ policy: RefundPolicy, designerID: String) async throws

    // MARK: The flow

    /// Creates `payment` for the customer's confirmed, upcoming, priced, unpaid reservation and holds its
    /// slot until `payment.holdUntilMilliseconds` (or the hold an earlier, failed payment started), with
    /// the release scheduled; answers a live payment instead when there is one.
    func prepare(_ payment: PaymentRecord, now: Int64) async throws -> PaymentRecord
    /// Checks a confirmation against the stored order (customer, amount, hold, key) and moves a prepared
    /// payment to confirming, scheduling its reconciliation `reconcileAfter` ms later.
    func beginConfirming(
        orderID: String, customerID: String, paymentKey: String, amountKRW: Int64, now: Int64, reconcileAfter: Int64
    ) async throws -> ConfirmStart
    /// The provider captured the payment (`balanceKRW` still charged): paid, or refunded at once when the
    /// reservation is gone.
    func settleCaptured(paymentID: String, now: Int64) async throws -> SettleOutcome
    /// The provider refused it or never saw it: failed, nothing captured.
    func settleDeclined(paymentID: String, code: String, message: String, now: Int64) async throws -> PaymentRecord

    // MARK: Cancelling and refunds

    /// Cancels the reservation with `cancellation` and, for a paid one, records the refund `refundAmount`
    /// gives (balance, policy, start, now) with its outbox job; a prepared payment expires, a confirming one
    /// is refunded in full once captured. Answers the reservation as stored afterwards and the refund, if
    /// any (nil reservation: unknown).
    func cancelReservation(
        id: String, _ cancellation: Cancellation,
        refundAmount: @escaping @Sendable (_ balance: Int64, _ policy: RefundPolicy, _ start: Int64) -> (Int64, String)
    ) async throws -> (ReservationRecord, RefundRecord?)?
    /// The provider confirmed the refund: done, the payment's refunded sum and state, the ledger pair.
    func completeRefund(refundID: String, now: Int64) async throws -> PaymentRecord

    // MARK: Reads

    func payment(id: String) async throws -> PaymentRecord?
    func payment(orderID: String) async throws -> PaymentRecord?
    func refund(id: String) async throws -> RefundRecord?
    /// One page of a customer's or designer's payments, newest first.
    func payments(of party: ReservationParty, after position: PagePosition<Int64>?, limit: Int) async throws
        -> [PaymentRecord]
    /// The designer's ledger movements (captures positive, refunds negative) in [from, until).
    func movements(designerID: String, from: Int64, until: Int64) async throws -> [LedgerMovement]
    /// The whole ledger, oldest first, and every payment that captured money.
    func ledger() async throws -> (entries: [LedgerEntry], captured: [PaymentRecord])
    /// Payments settled as holding no money (failed, or expired after a payment key was given); confirming
    /// ones are reconciliation's. The ledger check asks the provider whether it captured any of them.
    func uncapturedPayments() async throws -> [PaymentRecord]

    /// At start: every payment still confirming (a crash between the provider's answer and the commit)
    /// gets its reconciliation now; answers how many.
    func reconcileLeftovers(now: Int64) async throws -> Int

    // MARK: Webhook

    /// Records a provider's event and its outbox job; false when the event id was recorded before.
    func recordEvent(id: String, type: String, orderID: String, providerStatus: String, now: Int64) async throws
        -> Bool
    /// The order id of a recorded event, marking it processed.
    func processEvent(id: String, now: Int64) async throws -> String?
}

/// The names both engines' payment stores give their scheduler jobs and outbox work.
enum PaymentJobs {
    /// The outbox destination of the payment worker (`PaymentWorker`).
    static let workDestination = "payments"
    static let holdKind = "payment.hold"
    static let reconcileKind = "payment.reconcile"
    /// A hold job that finds a confirmation in flight looks again this much later.
    static let holdRecheckMilliseconds: Int64 = 60_000

    static func holdID(reservationID: String) -> String { "payment-hold:\(reservationID)" }
    static func reconcileID(paymentID: String) -> String { "payment-reconcile:\(paymentID)" }

    /// The job that releases the reservation's slot if it is still unpaid at `due`.
    static func hold(reservationID: String, due: Int64) -> ScheduledJob {
        ScheduledJob(
            id: holdID(reservationID: reservationID), kind: holdKind, subject: reservationID, dueAtMilliseconds: due)
    }

    /// The job that asks the provider about a payment still confirming at `due`.
    static func reconcile(paymentID: String, due: Int64) -> ScheduledJob {
        ScheduledJob(
            id: reconcileID(paymentID: paymentID), kind: reconcileKind, subject: paymentID, dueAtMilliseconds: due)
    }
}
