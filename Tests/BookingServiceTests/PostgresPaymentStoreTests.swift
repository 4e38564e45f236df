import Foundation
import NIOConcurrencyHelpers
import PostgresNIO
import PostgresTestSupport
import XCTest
import YediProto

@testable import BookingService
@testable import ServiceRuntime

/// `PaymentStoreContract` on PostgreSQL, each check on a fresh database migrated with
/// `BookingPostgresSchema`, and what replicas add: two stores on two pools of one database racing over one
/// reservation's payment (docs/postgres.md, "Payments on PostgreSQL").
final class PostgresPaymentStoreTests: XCTestCase {
    private typealias C = BookingStoreContract
    private typealias P = PaymentStoreContract

    private let clock = ManualClock(Date(timeIntervalSince1970: Double(PaymentStoreContract.now) / 1_000))

    /// The pieces one replica has: its pool, booking and payment stores on one scheduler and outbox.
    private struct Replica {
        var postgres: ServicePostgres
        var booking: PostgresBookingStore
        var payments: PostgresPaymentStore
        var scheduler: Scheduler
    }

    private func replica(_ postgres: ServicePostgres, freed: NIOLockedValueBox<[String]>? = nil) -> Replica {
        let scheduler = Scheduler(clock: clock)
        let outbox = Outbox(ids: RandomIDGenerator(), clock: clock)
        return Replica(
            postgres: postgres,
            booking: PostgresBookingStore(postgres: postgres, scheduler: scheduler, outbox: outbox),
            payments: PostgresPaymentStore(
                postgres: postgres, scheduler: scheduler, outbox: outbox,
                slotsFreed: { designer in freed?.withLockedValue { $0.append(designer) } }),
            scheduler: scheduler)
    }

    /// One replica on a fresh database, and a second on its own pool when `replicas` is 2.
    private func withReplicas(
        _ replicas: Int = 1, freed: NIOLockedValueBox<[String]>? = nil, _ body: ([Replica]) async throws -> Void
    ) async throws {
        let database = try await TestDatabase(service: "booking", migrations: BookingPostgresSchema.migrations)
        let second = try ServicePostgres(settings: database.settings, logger: TestPostgres.logger)
        let runner = Task { await second.run() }
        do {
            let all = [replica(database.postgres, freed: freed), replica(second, freed: freed)]
            try await body(Array(all.prefix(replicas)))
        } catch {
            runner.cancel()
            await runner.value
            try? await database.close()
            throw error
        }
        runner.cancel()
        await runner.value
        try await database.close()
    }

    /// Reservation r1 of customer c1, paid with payment p1 (45,000 KRW) through the whole flow.
    private func paidReservation(_ replica: Replica) async throws {
        _ = try await replica.booking.reserve(C.reservation("r1", start: C.base))
        _ = try await replica.payments.prepare(try P.payment("p1", reservation: "r1"), now: P.now)
        _ = try await replica.payments.beginConfirming(
            orderID: "order-p1", customerID: "c1", paymentKey: "k", amountKRW: 45_000, now: P.now, reconcileAfter: 1)
        let settled = try await replica.payments.settleCaptured(paymentID: "p1", now: P.now)
        guard case .paid = settled else { return XCTFail("not paid: \(settled)") }
    }

    func testPaymentOnePerReservation() async throws {
        try await withReplicas { r in try await P.onePaymentPerReservation(r[0].booking, r[0].payments) }
    }

    func testPaymentRefusedConfirmationsChangeNothing() async throws {
        try await withReplicas { r in try await P.refusedConfirmationsChangeNothing(r[0].booking, r[0].payments) }
    }

    func testPaymentCancellingRecordsAndCompletesARefund() async throws {
        try await withReplicas { r in try await P.cancellingRecordsAndCompletesARefund(r[0].booking, r[0].payments) }
    }

    /// The ledger refuses UPDATE and DELETE (the trigger), and a second posting of a pair (unique group).
    func testPaymentLedgerIsAppendOnlyOnPostgres() async throws {
        try await withReplicas { r in
            let postgres = r[0].postgres
            try await postgres.write { tx in
                try await PostgresPaymentStore.post(PaymentLedger.capture(paymentID: "p1", amountKRW: 100, at: 1), tx)
            }
            for sql in ["UPDATE payment_ledger SET debit_krw = 1", "DELETE FROM payment_ledger"] {
                do {
                    try await postgres.write { tx in try await tx.query(PostgresQuery(unsafeSQL: sql)) }
                    XCTFail("\(sql) changed the ledger")
                } catch let error as PSQLError {
                    XCTAssertEqual(error.serverInfo?[.message], "payment_ledger is append-only", sql)
                }
            }
            do {
                try await postgres.write { tx in
                    try await PostgresPaymentStore.post(
                        PaymentLedger.capture(paymentID: "p1", amountKRW: 100, at: 2), tx)
                }
                XCTFail("a capture was posted twice")
            } catch let violation as PostgresConstraintViolation {
                XCTAssertTrue(violation.isUniqueViolation, "\(violation)")
            }
            let (entries, _) = try await r[0].payments.ledger()
            XCTAssertEqual(entries.count, 2)
        }
    }

    // MARK: Two replicas

    /// The contract's replica checks with two stores on two pools of one database.
    func testTwoReplicasPreparingOneReservationStoreOnePayment() async throws {
        try await withReplicas(2) { r in
            try await P.replicasPreparingOneReservationStoreOnePayment(r[0].booking, r.map(\.payments))
        }
    }

    func testACaptureRacingACancellationRefundsOnce() async throws {
        try await withReplicas(2) { r in
            try await P.aCaptureRacingACancellationRefundsOnce(r[0].booking, r.map(\.payments))
        }
    }

    func testTwoReplicasCompletingOneRefundPostItOnce() async throws {
        try await withReplicas(2) { r in
            try await P.replicasCompletingOneRefundPostItOnce(r[0].booking, r.map(\.payments))
        }
    }

    // MARK: Jobs and deletion

    /// The hold's job, run by the scheduler on PostgreSQL once the hold runs out, cancels the unpaid
    /// reservation, expires its payment and frees the slot.
    func testAnUnpaidHoldIsReleasedByTheSchedulerOnPostgres() async throws {
        let freed = NIOLockedValueBox<[String]>([])
        try await withReplicas(freed: freed) { r in
            let replica = r[0]
            let payments = replica.payments
            let clock = self.clock
            replica.scheduler.handle(
                PaymentJobs.holdKind,
                postgres: { job, tx in
                    try await payments.releaseHold(reservationID: job.subject ?? "", now: clock.nowMilliseconds, tx)
                })
            _ = try await replica.booking.reserve(C.reservation("r1", start: C.base))
            let prepared = try await payments.prepare(try P.payment("p1", reservation: "r1"), now: P.now)
            let worker = SchedulerWorker(
                postgres: replica.postgres, scheduler: replica.scheduler, logger: TestPostgres.logger)
            _ = await worker.runDueJobs()
            let early = try await replica.booking.reservation(id: "r1")
            XCTAssertEqual(early?.status, .confirmed, "not before the hold runs out")

            clock.set(Date(timeIntervalSince1970: Double(prepared.holdUntilMilliseconds) / 1_000))
            _ = await worker.runDueJobs()
            let released = try await replica.booking.reservation(id: "r1")
            XCTAssertEqual(released?.status, .cancelled)
            XCTAssertEqual(released?.cancelReason, Int(YediBooking.CancelReason.paymentExpired.rawValue))
            let payment = try await payments.payment(id: "p1")
            XCTAssertEqual(payment?.state, .expired)
            XCTAssertEqual(freed.withLockedValue { $0 }, ["d1"], "the slot's cache was told after the commit")
        }
    }

    /// Account deletion on PostgreSQL refunds the user's upcoming paid reservation in full (a refund job in
    /// the outbox) and leaves the payment without their name.
    func testPurgeRefundsAndForgetsTheUsersPaymentsOnPostgres() async throws {
        try await withReplicas { r in
            try await paidReservation(r[0])
            let purged = try await r[0].booking.purgeUser(
                "c1", delivery: SQLiteBookingStoreTests.delivery("job-purge"), now: P.now + 1)
            XCTAssertTrue(purged)
            let payment = try await r[0].payments.payment(id: "p1")
            XCTAssertEqual(payment?.customerID, "")
            XCTAssertEqual(payment?.refunds.map(\.amountKRW), [45_000])
            let refundJobs = try await r[0].postgres.read { connection in
                try await connection.query(
                    "SELECT count(*) FROM runtime_outbox WHERE peer = \(PaymentJobs.workDestination)",
                    logger: TestPostgres.logger
                ).collect()[0].decode(Int.self)
            }
            XCTAssertEqual(refundJobs, 1)
        }
    }
}
