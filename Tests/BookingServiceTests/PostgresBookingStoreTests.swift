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

    // MARK: Two replicas

    /// A second store on its own pool of the same database, as another replica would have.
    private func withReplica(
        of database: TestDatabase, _ body: (PostgresBookingStore) async throws -> Void
    ) async throws {
        try await database.withSecondPool { postgres in try await body(PostgresBookingStore(postgres: postgres)) }
    }

    /// 10 rounds, each of three overlapping reservations of one designer made at once through two
    /// replicas (an hour at :00 and one at :30, and two hours around both): exactly one confirmed per
    /// round, the others `slotTaken` and stored nowhere.
    func testOverlappingReservationsOnTwoReplicasConfirmOnePerOverlap() async throws {
        try await withStore { first, database in
            try await withReplica(of: database) { second in
                let rounds = 10
                for round in 0..<rounds {
                    let start = C.base + Int64(round) * 4 * C.hour
                    let attempts: [(any BookingStore, ReservationRecord)] = [
                        (first, C.reservation("a\(round)", customer: "ca", start: start + C.hour / 2)),
                        (second, C.reservation("b\(round)", customer: "cb", start: start + C.hour)),
                        (second, C.reservation("c\(round)", customer: "cc", start: start, minutes: 120)),
                    ]
                    let outcomes = try await withThrowingTaskGroup(of: String?.self) { group in
                        for (store, reservation) in attempts {
                            group.addTask {
                                do {
                                    guard case .created(let made) = try await store.reserve(reservation) else {
                                        XCTFail("\(reservation.id) answered an earlier reservation")
                                        return nil
                                    }
                                    return made.id
                                } catch BookingStoreError.slotTaken {
                                    return nil
                                }
                            }
                        }
                        return try await group.reduce(into: [String]()) { if let id = $1 { $0.append(id) } }
                    }
                    XCTAssertEqual(outcomes.count, 1, "round \(round): \(outcomes) confirmed")
                    for (_, reservation) in attempts where !outcomes.contains(reservation.id) {
                        let stored = try await first.reservation(id: reservation.id)
                        XCTAssertNil(stored, "a refused reservation leaves nothing behind")
                    }
                    let held = try await second.bookedTimes(designerID: "d1", from: start, until: start + 4 * C.hour)
                    let confirmed = try await first.reservation(id: outcomes.first ?? "")
                    XCTAssertEqual(
                        held,
                        BookedTimes(confirmed.map { [$0.startAtMilliseconds..<$0.endAtMilliseconds] } ?? []),
                        "round \(round): only the confirmed reservation's cells are held")
                }
                let all = try await first.designerReservations(
                    designerID: "d1", from: C.base, until: C.base + Int64(rounds) * 4 * C.hour)
                XCTAssertEqual(all.count, rounds)
            }
        }
    }

    /// The same customer and idempotency key on both replicas at once (a retry racing its first attempt):
    /// one reservation is stored and both answer it, never "taken"; with and without quotas (the
    /// customer's lock) and for the same or another time.
    func testTheSameIdempotencyKeyOnTwoReplicasAnswersOneReservation() async throws {
        try await withStore { first, database in
            try await withReplica(of: database) { second in
                let quotas = ReservationQuotas(
                    open: Quota(name: "reservations.open", limit: 100, counted: "upcoming reservations"),
                    perDay: Quota(name: "reservations.day", limit: 100, counted: "reservations made per day"))
                for round in 0..<10 {
                    let start = C.base + Int64(round) * 4 * C.hour
                    let key = "key-\(round)"
                    let retryStart = round % 4 < 2 ? start : start + 2 * C.hour
                    let limits = round % 2 == 0 ? quotas : nil
                    let attempts: [(any BookingStore, ReservationRecord)] = [
                        (first, C.reservation("x\(round)", start: start, key: key)),
                        (second, C.reservation("y\(round)", start: retryStart, key: key)),
                    ]
                    let answers = try await withThrowingTaskGroup(of: ReserveOutcome.self) { group in
                        for (store, reservation) in attempts {
                            group.addTask { try await store.reserve(reservation, quotas: limits) }
                        }
                        return try await group.reduce(into: [ReserveOutcome]()) { $0.append($1) }
                    }
                    var created: [ReservationRecord] = []
                    var existing: [ReservationRecord] = []
                    for answer in answers {
                        switch answer {
                        case .created(let reservation): created.append(reservation)
                        case .existing(let reservation): existing.append(reservation)
                        }
                    }
                    XCTAssertEqual(created.count, 1, "round \(round): \(answers)")
                    XCTAssertEqual(existing, created, "round \(round): both answer the same reservation")
                    let stored = try await first.bookingSetting(
                        designerID: "d1", closedFrom: LocalDay(year: 2027, month: 1, day: 1)!,
                        through: LocalDay(year: 2027, month: 1, day: 1)!, customerID: "c1", idempotencyKey: key
                    ).earlier
                    XCTAssertEqual(stored, created.first)
                    let held = try await second.bookedTimes(designerID: "d1", from: start, until: start + 4 * C.hour)
                    XCTAssertEqual(held.intervals.map { $0.upperBound - $0.lowerBound }, [C.hour], "one hour held")
                }
            }
        }
    }

    /// 20 reserves of one customer at once, spread over two replicas, with room for 4 open: exactly 4.
    func testQuotasHoldAcrossTwoReplicas() async throws {
        try await withStore { first, database in
            try await withReplica(of: database) { second in
                let quotas = ReservationQuotas(
                    open: Quota(name: "reservations.open", limit: 4, counted: "upcoming reservations"),
                    perDay: Quota(name: "reservations.day", limit: 10, counted: "reservations made per day"))
                let made = try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<20 {
                        let store: any BookingStore = index % 2 == 0 ? first : second
                        group.addTask {
                            do {
                                _ = try await store.reserve(
                                    C.reservation("q\(index)", start: C.base + Int64(index) * C.hour), quotas: quotas)
                                return 1
                            } catch let error as QuotaExceeded {
                                XCTAssertEqual(error, QuotaExceeded(quota: quotas.open))
                                return 0
                            }
                        }
                    }
                    return try await group.reduce(0, +)
                }
                XCTAssertEqual(made, 4)
                let upcoming = try await first.reservations(
                    of: .customer("c1"), filter: .upcoming, now: 0, after: nil, limit: 100)
                XCTAssertEqual(upcoming.count, 4)
            }
        }
    }
}
