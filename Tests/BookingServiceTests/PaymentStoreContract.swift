import Foundation
import GRDB
import Logging
import ServiceRuntime
import XCTest
import YediProto

@testable import BookingService

/// What every `PaymentStore` must do, against the protocol only (with the `BookingStore` of the same
/// database for its reservations): a second engine gets a test class handing its stores to these.
enum PaymentStoreContract {
    typealias C = BookingStoreContract
    static let now: Int64 = C.base - 48 * C.hour

    static func payment(_ id: String, reservation: String, customer: String = "c1", amount: Int64 = 45_000)
        throws -> PaymentRecord
    {
        PaymentRecord(
            id: id, orderID: "order-\(id)", reservationID: reservation, customerID: customer, designerID: "d1",
            orderName: "컷", provider: "development", paymentKey: nil,
            lifecycle: try PaymentLifecycle(preparing: amount, at: now), createdAtMilliseconds: now,
            holdUntilMilliseconds: now + 600_000)
    }

    /// One live payment per reservation; only its customer prepares it; a paid one refuses another.
    static func onePaymentPerReservation(_ booking: any BookingStore, _ store: any PaymentStore) async throws {
        _ = try await booking.reserve(C.reservation("r1", start: C.base))
        let first = try await store.prepare(try payment("p1", reservation: "r1"), now: now)
        let again = try await store.prepare(try payment("p2", reservation: "r1"), now: now + 1)
        XCTAssertEqual(again.id, first.id, "a live payment is answered, not doubled")
        do {
            _ = try await store.prepare(try payment("p3", reservation: "r1", customer: "c2"), now: now)
            XCTFail("another customer prepared a payment")
        } catch let error as PaymentStoreError {
            XCTAssertEqual(error, .notTheCustomer)
        }
        let start = try await store.beginConfirming(
            orderID: "order-p1", customerID: "c1", paymentKey: "dev_ok_1", amountKRW: 45_000, now: now + 2,
            reconcileAfter: 30_000)
        guard case .askProvider(let confirming) = start else { return XCTFail("\(start)") }
        XCTAssertEqual(confirming.state, .confirming)
        guard case .paid(let paid) = try await store.settleCaptured(paymentID: "p1", now: now + 3) else {
            return XCTFail("not paid")
        }
        XCTAssertEqual(paid.lifecycle.transitions.map(\.state), [.prepared, .confirming, .paid])
        guard case .unchanged = try await store.settleCaptured(paymentID: "p1", now: now + 4) else {
            return XCTFail("settled twice")
        }
        do {
            _ = try await store.prepare(try payment("p4", reservation: "r1"), now: now + 5)
            XCTFail("a paid reservation was prepared again")
        } catch let error as PaymentStoreError {
            XCTAssertEqual(error, .alreadyPaid)
        }
        let (entries, captured) = try await store.ledger()
        XCTAssertEqual(entries.count, 2, "one capture pair, however often it is settled")
        XCTAssertEqual(captured.map(\.id), ["p1"])
    }

    /// A mismatched amount or an expired hold leaves the payment prepared and untouched.
    static func refusedConfirmationsChangeNothing(_ booking: any BookingStore, _ store: any PaymentStore)
        async throws
    {
        _ = try await booking.reserve(C.reservation("r1", start: C.base))
        _ = try await store.prepare(try payment("p1", reservation: "r1"), now: now)
        for (amount, at, expected) in [
            (Int64(45_001), now + 1, PaymentStoreError.amountMismatch(expected: 45_000)),
            (Int64(45_000), now + 600_000, PaymentStoreError.holdExpired),
        ] {
            do {
                _ = try await store.beginConfirming(
                    orderID: "order-p1", customerID: "c1", paymentKey: "k", amountKRW: amount, now: at,
                    reconcileAfter: 30_000)
                XCTFail("confirmed \(amount) at \(at)")
            } catch let error as PaymentStoreError {
                XCTAssertEqual(error, expected)
            }
        }
        let stored = try await store.payment(id: "p1")
        XCTAssertEqual(stored?.state, .prepared)
        XCTAssertNil(stored?.paymentKey)
    }

    /// Cancelling a paid reservation records the refund the policy gives; completing it posts the pair
    /// once and updates the payment and the reservation.
    static func cancellingRecordsAndCompletesARefund(_ booking: any BookingStore, _ store: any PaymentStore)
        async throws
    {
        _ = try await booking.reserve(C.reservation("r1", start: C.base))
        _ = try await store.prepare(try payment("p1", reservation: "r1"), now: now)
        _ = try await store.beginConfirming(
            orderID: "order-p1", customerID: "c1", paymentKey: "k", amountKRW: 45_000, now: now, reconcileAfter: 1)
        _ = try await store.settleCaptured(paymentID: "p1", now: now)
        let outcome = try await store.cancelReservation(
            id: "r1", Cancellation(by: .customer, reason: 1, note: "일정이 생겼어요", atMilliseconds: now + 1),
            refundAmount: { balance, policy, start in
                policy.customerRefund(balanceKRW: balance, start: start, now: start - 10 * C.hour)
            })
        let (reservation, refund) = try XCTUnwrap(outcome)
        XCTAssertEqual(reservation.status, .cancelled)
        XCTAssertEqual(reservation.cancelNote, "일정이 생겼어요")
        XCTAssertEqual(refund?.amountKRW, 22_500)
        XCTAssertEqual(refund?.state, .requested)
        let done = try await store.completeRefund(refundID: try XCTUnwrap(refund?.id), now: now + 2)
        let again = try await store.completeRefund(refundID: try XCTUnwrap(refund?.id), now: now + 3)
        XCTAssertEqual(done.state, .partiallyRefunded)
        XCTAssertEqual(again.lifecycle.refundedKRW, 22_500, "completed once")
        let (entries, _) = try await store.ledger()
        let report = PaymentLedger.check(entries)
        XCTAssertTrue(report.balanced)
        XCTAssertEqual(report.netByPayment["p1"], 22_500)
        let stored = try await booking.reservation(id: "r1")
        XCTAssertEqual(stored?.refundedKRW, 22_500)
    }

    // MARK: Replicas

    /// 10 rounds: every replica prepares a payment for the same reservation at once; all answer the one
    /// payment stored, and the losers' payments were never stored.
    static func replicasPreparingOneReservationStoreOnePayment(
        _ booking: any BookingStore, _ replicas: [any PaymentStore]
    ) async throws {
        for round in 0..<10 {
            _ = try await booking.reserve(C.reservation("r\(round)", start: C.base + Int64(round) * C.hour))
            let answers = try await withThrowingTaskGroup(of: String.self) { group in
                for (index, replica) in replicas.enumerated() {
                    group.addTask {
                        try await replica.prepare(try payment("p\(round)-\(index)", reservation: "r\(round)"), now: now)
                            .id
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            XCTAssertEqual(Set(answers).count, 1, "round \(round): \(answers)")
            for index in replicas.indices {
                let id = "p\(round)-\(index)"
                let stored = try await replicas[0].payment(id: id)
                XCTAssertEqual(stored != nil, answers.first == id, "round \(round): \(id) stored: \(stored != nil)")
            }
        }
    }

    /// 10 rounds: the provider's capture is settled on one replica while the customer cancels on another.
    /// Whichever runs first, the money comes back exactly once, in full: one capture pair, one refund.
    static func aCaptureRacingACancellationRefundsOnce(_ booking: any BookingStore, _ replicas: [any PaymentStore])
        async throws
    {
        for round in 0..<10 {
            let id = "r\(round)"
            _ = try await booking.reserve(C.reservation(id, start: C.base + Int64(round) * C.hour))
            _ = try await replicas[0].prepare(try payment("p\(round)", reservation: id), now: now)
            _ = try await replicas[0].beginConfirming(
                orderID: "order-p\(round)", customerID: "c1", paymentKey: "k\(round)", amountKRW: 45_000,
                now: now + 1, reconcileAfter: 30_000)
            async let settled = replicas[0].settleCaptured(paymentID: "p\(round)", now: now + 2)
            async let cancelled = replicas[1].cancelReservation(
                id: id, Cancellation(by: .customer, reason: 1, note: "", atMilliseconds: now + 2),
                refundAmount: { balance, _, _ in (balance, "full") })
            _ = try await (settled, cancelled)
            let stored = try await replicas[0].payment(id: "p\(round)")
            XCTAssertEqual(stored?.refunds.map(\.amountKRW), [45_000], "round \(round)")
            let reservation = try await booking.reservation(id: id)
            XCTAssertEqual(reservation?.status, .cancelled)
        }
        let (entries, captured) = try await replicas[0].ledger()
        XCTAssertEqual(entries.count, 20, "one capture pair per round")
        XCTAssertEqual(captured.count, 10)
    }

    /// The provider's confirmation of one refund reaching two replicas at once completes it once.
    static func replicasCompletingOneRefundPostItOnce(_ booking: any BookingStore, _ replicas: [any PaymentStore])
        async throws
    {
        _ = try await booking.reserve(C.reservation("r1", start: C.base))
        _ = try await replicas[0].prepare(try payment("p1", reservation: "r1"), now: now)
        _ = try await replicas[0].beginConfirming(
            orderID: "order-p1", customerID: "c1", paymentKey: "k", amountKRW: 45_000, now: now, reconcileAfter: 1)
        guard case .paid = try await replicas[0].settleCaptured(paymentID: "p1", now: now) else {
            return XCTFail("not paid")
        }
        let outcome = try await replicas[0].cancelReservation(
            id: "r1", Cancellation(by: .customer, reason: 1, note: "", atMilliseconds: now + 1),
            refundAmount: { balance, _, _ in (balance, "full") })
        let refundID = try XCTUnwrap(outcome?.1?.id)
        async let first = replicas[0].completeRefund(refundID: refundID, now: now + 2)
        async let second = replicas[1].completeRefund(refundID: refundID, now: now + 2)
        let done = try await [first, second]
        XCTAssertEqual(done.map(\.lifecycle.refundedKRW), [45_000, 45_000])
        let (entries, _) = try await replicas[0].ledger()
        XCTAssertEqual(entries.count, 4, "the capture pair and one refund pair")
        XCTAssertTrue(PaymentLedger.check(entries).balanced)
    }
}

final class SQLitePaymentStoreTests: XCTestCase {
    private var database: ServiceDatabase!
    private var booking: SQLiteBookingStore!
    private var store: SQLitePaymentStore!

    override func setUpWithError() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-payment-store-\(UUID().uuidString)").path
        database = try ServiceDatabase.open(
            directory: directory, name: "booking", migrations: BookingServiceDefinition.migrate,
            logger: Logger(label: "test"))
        let outbox = Outbox(ids: SequentialIDGenerator(prefix: "job"), clock: ManualClock())
        booking = SQLiteBookingStore(database: database, outbox: outbox)
        store = Self.replica(database, outbox: outbox)
        addTeardownBlock { [database] in
            try database?.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// The payments destination delivers in order: work that can never succeed is dropped (and logged),
    /// not retried for ever in front of every refund behind it.
    func testPaymentWorkThatCanNeverSucceedIsDroppedNotRetried() async throws {
        let flow = PaymentFlow(
            store: store, provider: DevelopmentPaymentProvider(folder: nil), clock: ManualClock(),
            logger: Logger(label: "test"))
        let worker = PaymentWorker(flow: flow)
        for payload in [[0xFF, 0xFF, 0xFF] as [UInt8], try YediBooking.PaymentWork().serializedBytes()] {
            do {
                try await worker.send(payload: payload, jobID: "job-1")
                XCTFail("work \(payload) was accepted")
            } catch let dropped as UndeliverableMessage {
                XCTAssertTrue(dropped.dropsJob, "\(dropped)")
            }
        }
        // Work about a refund that no longer exists is done (nothing to do), not retried.
        var refund = YediBooking.PaymentWork()
        refund.kind = .refund
        refund.refundID = "gone"
        try await worker.send(payload: try refund.serializedBytes(), jobID: "job-2")
    }

    /// The flow's settling rules on a real store: an answer still in progress or about another amount
    /// leaves the payment confirming (never failed while the provider could capture, never paid for what
    /// it was not).
    func testPaymentSettlesOnlyAFinalAnswerAboutThisPayment() async throws {
        typealias C = BookingStoreContract
        let now = PaymentStoreContract.now
        _ = try await booking.reserve(C.reservation("r1", start: C.base))
        _ = try await store.prepare(try PaymentStoreContract.payment("p1", reservation: "r1"), now: now)
        _ = try await store.beginConfirming(
            orderID: "order-p1", customerID: "c1", paymentKey: "k", amountKRW: 45_000, now: now + 1,
            reconcileAfter: 30_000)
        let flow = PaymentFlow(
            store: store, provider: DevelopmentPaymentProvider(folder: nil), clock: ManualClock(),
            logger: Logger(label: "test"))
        func answer(_ status: ProviderPayment.Status, total: Int64 = 45_000, order: String = "order-p1")
            -> ProviderPayment
        {
            ProviderPayment(
                paymentKey: "k", orderID: order, status: status, totalAmountKRW: total, balanceAmountKRW: total)
        }
        for unsettled in [answer(.inProgress), answer(.ready), answer(.done, total: 1), answer(.done, order: "other")] {
            do {
                _ = try await flow.settle("p1", answer: unsettled)
                XCTFail("settled on \(unsettled)")
            } catch PaymentProviderError.unavailable {
                let still = try await store.payment(id: "p1")
                XCTAssertEqual(still?.state, .confirming, "\(unsettled)")
            }
        }
        let paid = try await flow.settle("p1", answer: answer(.done))
        XCTAssertEqual(paid.state, .paid)
    }

    func testPaymentOnePerReservation() async throws {
        try await PaymentStoreContract.onePaymentPerReservation(booking, store)
    }

    /// A payment store as one replica has it: its own scheduler, on the replica's outbox.
    private static func replica(_ database: ServiceDatabase, outbox: Outbox) -> SQLitePaymentStore {
        SQLitePaymentStore(
            database: database, scheduler: Scheduler(clock: ManualClock()), outbox: outbox, slotsFreed: { _ in })
    }

    /// Two stores on the database, as two replicas would have (SQLite has one writer: they take turns).
    private var replicas: [any PaymentStore] {
        let second = Outbox(ids: SequentialIDGenerator(prefix: "replica-job"), clock: ManualClock())
        return [store!, Self.replica(database, outbox: second)]
    }

    func testTwoReplicasPreparingOneReservationStoreOnePayment() async throws {
        try await PaymentStoreContract.replicasPreparingOneReservationStoreOnePayment(booking, replicas)
    }

    func testACaptureRacingACancellationRefundsOnce() async throws {
        try await PaymentStoreContract.aCaptureRacingACancellationRefundsOnce(booking, replicas)
    }

    func testTwoReplicasCompletingOneRefundPostItOnce() async throws {
        try await PaymentStoreContract.replicasCompletingOneRefundPostItOnce(booking, replicas)
    }

    func testPaymentRefusedConfirmationsChangeNothing() async throws {
        try await PaymentStoreContract.refusedConfirmationsChangeNothing(booking, store)
    }

    func testPaymentCancellingRecordsAndCompletesARefund() async throws {
        try await PaymentStoreContract.cancellingRecordsAndCompletesARefund(booking, store)
    }

    /// The ledger refuses UPDATE and DELETE (triggers), and a second posting of a pair (unique group).
    func testPaymentLedgerIsAppendOnly() async throws {
        try await database.write { db in
            try SQLitePaymentStore.post(PaymentLedger.capture(paymentID: "p1", amountKRW: 100, at: 1), db)
        }
        for sql in ["UPDATE payment_ledger SET debit_krw = 1", "DELETE FROM payment_ledger"] {
            do {
                try await database.write { db in try db.execute(sql: sql) }
                XCTFail("\(sql) changed the ledger")
            } catch let error as DatabaseError {
                XCTAssertTrue(error.message?.contains("append-only") ?? false, "\(error)")
            }
        }
        do {
            try await database.write { db in
                try SQLitePaymentStore.post(PaymentLedger.capture(paymentID: "p1", amountKRW: 100, at: 2), db)
            }
            XCTFail("a capture was posted twice")
        } catch let error as DatabaseError {
            XCTAssertEqual(error.resultCode, .SQLITE_CONSTRAINT)
        }
        let count = try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM payment_ledger") }
        XCTAssertEqual(count, 2)
    }
}
