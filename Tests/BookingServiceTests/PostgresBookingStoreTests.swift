import Foundation
import PostgresNIO
import PostgresTestSupport
import RPCAccess
import XCTest

@testable import BookingService
@testable import ServiceRuntime

/// `BookingStoreContract` on PostgreSQL: every check the SQLite class runs, each on a fresh database
/// migrated with `BookingPostgresSchema`, plus the races the issue names with two stores on two pools of
/// one database (two replicas).
final class PostgresBookingStoreTests: XCTestCase {
    private typealias C = BookingStoreContract

    /// A store on a fresh database for `body`; the database is dropped afterwards, also when `body` threw.
    private func withStore(_ body: (PostgresBookingStore, TestDatabase) async throws -> Void) async throws {
        let database = try await TestDatabase(service: "booking", migrations: BookingPostgresSchema.migrations)
        do {
            try await body(PostgresBookingStore(postgres: database.postgres), database)
        } catch {
            try? await database.close()
            throw error
        }
        try await database.close()
    }

    func testSchedulesAndMenusRoundTrip() async throws {
        try await withStore { store, _ in try await C.schedulesAndMenusRoundTrip(store) }
    }

    func testTenantRowsStayInTheirApp() async throws {
        try await withStore { store, database in
            try await C.tenantRowsStayInTheirApp(
                yedi: store, other: PostgresBookingStore(postgres: database.postgres, app: "zipadoo"))
        }
    }

    func testOverlappingReservationsCannotBothBeConfirmed() async throws {
        try await withStore { store, _ in try await C.overlappingReservationsCannotBothBeConfirmed(store) }
    }

    func testIdempotencyKeysAnswerTheFirstReservation() async throws {
        try await withStore { store, _ in try await C.idempotencyKeysAnswerTheFirstReservation(store) }
    }

    func testBookingSettingReadsWhatAReservationIsCheckedAgainst() async throws {
        try await withStore { store, _ in try await C.bookingSettingReadsWhatAReservationIsCheckedAgainst(store) }
    }

    func testQuotasHoldUnderConcurrentReserves() async throws {
        try await withStore { store, _ in try await C.quotasHoldUnderConcurrentReserves(store) }
    }

    func testListsPageByStartAndStatus() async throws {
        try await withStore { store, _ in try await C.listsPageByStartAndStatus(store) }
    }

    func testPurgeRemovesTheUserOncePerDelivery() async throws {
        try await withStore { store, _ in
            try await C.purgeRemovesTheUserOncePerDelivery(store, delivery: SQLiteBookingStoreTests.delivery)
        }
    }

    // MARK: The day-before reminder (the scheduler on PostgreSQL)

    /// The booking transaction schedules the reminder and the cancelling one removes it; once due, the
    /// scheduler's worker runs it once, queuing AccountService's Notify through the outbox; a job whose
    /// reservation is no longer confirmed reminds nobody.
    func testReservationReminderIsScheduledWithItsReservationAndRunsOnce() async throws {
        try await withStore { bookingOnly, database in
            let clock = ManualClock(Date(timeIntervalSince1970: Double(C.base - 48 * C.hour) / 1_000))
            let scheduler = Scheduler(clock: clock)
            let outbox = Outbox(ids: SequentialIDGenerator(prefix: "job"), clock: clock)
            scheduler.handle(
                ReservationReminder.kind,
                postgres: { job, tx in
                    try await ReservationReminder.run(job, outbox: outbox, tx)
                })
            var store = bookingOnly
            store.scheduler = scheduler
            let postgres = database.postgres
            _ = try await store.reserve(C.reservation("r1", customer: "c1", start: C.base), quotas: nil)
            _ = try await store.reserve(C.reservation("r2", customer: "c2", start: C.base + 2 * C.hour), quotas: nil)
            _ = try await store.cancel(id: "r2", at: C.base - 47 * C.hour)
            let jobs = try await postgres.write { tx in
                (
                    try await scheduler.jobs(subject: "r1", in: tx),
                    try await scheduler.jobs(subject: "r2", in: tx)
                )
            }
            XCTAssertEqual(jobs.0.map(\.dueAtMilliseconds), [C.base - 24 * C.hour], "24 hours ahead")
            XCTAssertEqual(jobs.1, [], "the cancelled reservation's went with it")

            func notifications() async throws -> Int {
                try await postgres.read { connection in
                    try await connection.query(
                        "SELECT count(*) FROM runtime_outbox WHERE peer = 'account'", logger: TestPostgres.logger
                    ).collect().first?.decode(Int.self) ?? -1
                }
            }
            let worker = SchedulerWorker(postgres: postgres, scheduler: scheduler, logger: TestPostgres.logger)
            _ = await worker.runDueJobs()
            let early = try await notifications()
            XCTAssertEqual(early, 0, "not before it is due")
            clock.advance(by: 24 * 3_600)
            _ = await worker.runDueJobs()
            _ = await worker.runDueJobs()
            let sent = try await notifications()
            XCTAssertEqual(sent, 1, "once")

            let job = try XCTUnwrap(ReservationReminder.job(for: C.reservation("r2", start: C.base + 2 * C.hour)))
            let ran = try await postgres.write { tx in try await ReservationReminder.run(job, outbox: outbox, tx) }
            XCTAssertFalse(ran, "a cancelled reservation is not reminded of")
        }
    }

    // MARK: Replicas

    /// Three stores on three pools of a fresh database, as three replicas would have.
    private func withReplicas(_ body: ([any BookingStore]) async throws -> Void) async throws {
        try await withStore { first, database in
            try await database.withSecondPool { second in
                try await database.withSecondPool { third in
                    try await body([
                        first, PostgresBookingStore(postgres: second), PostgresBookingStore(postgres: third),
                    ])
                }
            }
        }
    }

    /// The contract's replica checks with three stores on three pools of one database.
    func testOverlappingReservationsOnReplicasConfirmOnePerOverlap() async throws {
        try await withReplicas { try await C.overlappingReservationsOnReplicasConfirmOnePerOverlap($0) }
    }

    func testTheSameIdempotencyKeyOnTwoReplicasAnswersOneReservation() async throws {
        try await withReplicas { try await C.theSameIdempotencyKeyOnTwoReplicasAnswersOneReservation($0) }
    }

    func testQuotasHoldAcrossReplicas() async throws {
        try await withReplicas { try await C.quotasHoldAcrossReplicas($0) }
    }
}
