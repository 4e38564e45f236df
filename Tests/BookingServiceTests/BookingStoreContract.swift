import Foundation
import GRDB
import Logging
import RPCAccess
import RPCCore
import ServiceRuntime
import XCTest
import YediProto

@testable import BookingService

/// What every `BookingStore` must do, written against the protocol only: a second engine (PostgreSQL)
/// gets a test class like `SQLiteBookingStoreTests` that hands its store to these same checks.
enum BookingStoreContract {
    static func schedule(_ designer: String, slot: Int = 60) -> ScheduleRecord {
        ScheduleRecord(
            designerID: designer, openingMinute: 540, closingMinute: 1260, slotMinutes: slot, timeZone: "Asia/Seoul",
            breaks: [BreakRange(start: 720, end: 780)], closedWeekdays: [7], updatedAtMilliseconds: 1)
    }

    static func style(_ id: String, price: Int64 = 45_000) -> StyleRecord {
        StyleRecord(id: id, name: "컷 \(id)", category: 1, priceKRW: price, durationMinutes: 60)
    }

    static func reservation(
        _ id: String, customer: String = "c1", designer: String = "d1", start: Int64, minutes: Int64 = 60,
        key: String? = nil
    ) -> ReservationRecord {
        ReservationRecord(
            id: id, customerID: customer, designerID: designer, startAtMilliseconds: start,
            endAtMilliseconds: start + minutes * 60_000, timeZone: "Asia/Seoul", styles: [style("s1")],
            totalPriceKRW: 45_000, status: .confirmed, idempotencyKey: key, createdAtMilliseconds: 5,
            cancelledAtMilliseconds: nil)
    }

    static let hour: Int64 = 3_600_000
    static let base: Int64 = 1_800_000_000_000 - (1_800_000_000_000 % 3_600_000)

    static func schedulesAndMenusRoundTrip(_ store: any BookingStore) async throws {
        let first = try await store.createDesigner(schedule("d1"), menu: [style("s1"), style("s2", price: 1)])
        XCTAssertEqual(first, schedule("d1"))
        // A second create (a concurrent first read) keeps what is stored.
        let second = try await store.createDesigner(schedule("d1", slot: 30), menu: [style("s3")])
        XCTAssertEqual(second, schedule("d1"))
        let menu = try await store.menu(designerID: "d1")
        XCTAssertEqual(menu, [style("s1"), style("s2", price: 1)])
        var changed = schedule("d1", slot: 30)
        changed.timeZone = "America/New_York"
        changed.breaks = []
        changed.closedWeekdays = [1, 6]
        try await store.updateSchedule(changed)
        let schedule = try await store.schedule(designerID: "d1")
        XCTAssertEqual(schedule, changed)
        let schedule2 = try await store.schedule(designerID: "d2")
        XCTAssertNil(schedule2)
        try await store.replaceMenu(designerID: "d1", styles: [style("s2", price: 2), style("s4")])
        let menu2 = try await store.menu(designerID: "d1")
        XCTAssertEqual(menu2, [style("s2", price: 2), style("s4")])

        let days = [LocalDay(year: 2027, month: 3, day: 12)!, LocalDay(year: 2027, month: 12, day: 25)!]
        try await store.updateClosedDays(designerID: "d1", add: days + days, remove: [])
        try await store.updateClosedDays(
            designerID: "d1", add: [LocalDay(year: 2028, month: 1, day: 1)!], remove: [days[0]])
        let stored = try await store.closedDays(
            designerID: "d1", from: LocalDay(year: 2027, month: 1, day: 1)!,
            through: LocalDay(year: 2027, month: 12, day: 31)!)
        XCTAssertEqual(stored, [days[1]])
    }

    static func overlappingReservationsCannotBothBeConfirmed(_ store: any BookingStore) async throws {
        let first = reservation("r1", start: base + hour)
        let outcome = try await store.reserve(first)
        XCTAssertEqual(outcome, .created(first))
        // Same slot, another customer.
        let same = reservation("r2", customer: "c2", start: base + hour)
        await assertTaken(store, same)
        // A 30-minute slot in the middle of the hour, and a 2-hour one starting before it.
        let inside = reservation("r3", customer: "c2", start: base + hour + hour / 2, minutes: 30)
        await assertTaken(store, inside)
        let around = reservation("r4", customer: "c2", start: base, minutes: 120)
        await assertTaken(store, around)
        // Back to back is fine; another designer's same hour is fine.
        let next = reservation("r5", customer: "c2", start: base + 2 * hour)
        let outcome2 = try await store.reserve(next)
        XCTAssertEqual(outcome2, .created(next))
        let elsewhere = reservation("r6", customer: "c2", designer: "d2", start: base + hour)
        let outcome3 = try await store.reserve(elsewhere)
        XCTAssertEqual(outcome3, .created(elsewhere))
        let stored = try await store.reservation(id: "r2")
        XCTAssertNil(stored, "a refused reservation leaves nothing behind")
        let held = try await store.bookedTimes(designerID: "d1", from: base, until: base + 3 * hour)
        XCTAssertEqual(held, BookedTimes([(base + hour)..<(base + 3 * hour)]), "back to back: one interval")
        let partly = try await store.bookedTimes(designerID: "d1", from: base + hour + hour / 2, until: base + 2 * hour)
        XCTAssertTrue(
            partly.overlaps(base + hour + hour / 2, base + 2 * hour), "a booking that began before the window")

        // Cancelling frees the cells; the hour can then be booked again.
        let cancelled = try await store.cancel(id: "r1", at: 99)
        XCTAssertEqual(cancelled?.status, .cancelled)
        XCTAssertEqual(cancelled?.cancelledAtMilliseconds, 99)
        let cancelled2 = try await store.cancel(id: "r1", at: 100)?.cancelledAtMilliseconds
        XCTAssertEqual(cancelled2, 99, "cancelled once")
        let cancelled3 = try await store.cancel(id: "missing", at: 100)
        XCTAssertNil(cancelled3)
        let outcome4 = try await store.reserve(same)
        XCTAssertEqual(outcome4, .created(same))
    }

    static func idempotencyKeysAnswerTheFirstReservation(_ store: any BookingStore) async throws {
        let first = reservation("r1", start: base, key: "k")
        let outcome = try await store.reserve(first)
        XCTAssertEqual(outcome, .created(first))
        let retry = reservation("r2", start: base + hour, key: "k")
        let outcome2 = try await store.reserve(retry)
        XCTAssertEqual(outcome2, .existing(first))
        let stored = try await store.reservation(id: "r2")
        XCTAssertNil(stored)
        let stored2 = try await earlier(store, customer: "c1", key: "k")
        XCTAssertEqual(stored2, first)
        let stored3 = try await earlier(store, customer: "c2", key: "k")
        XCTAssertNil(stored3)
        let otherCustomer = reservation("r3", customer: "c2", start: base + hour, key: "k")
        let outcome3 = try await store.reserve(otherCustomer)
        XCTAssertEqual(outcome3, .created(otherCustomer))
    }

    /// A customer's reservation with idempotency key `key`, as CreateReservation's one read finds it.
    static func earlier(_ store: any BookingStore, customer: String, key: String) async throws -> ReservationRecord? {
        let day = LocalDay(year: 2027, month: 1, day: 1)!
        return try await store.bookingSetting(
            designerID: "d1", closedFrom: day, through: day, customerID: customer, idempotencyKey: key
        ).earlier
    }

    /// One read gives CreateReservation the schedule, the closed dates in range, the menu and a retry's
    /// earlier reservation; a designer not set up reads as no schedule and nothing else.
    static func bookingSettingReadsWhatAReservationIsCheckedAgainst(_ store: any BookingStore) async throws {
        let from = LocalDay(year: 2027, month: 3, day: 11)!
        let through = LocalDay(year: 2027, month: 3, day: 13)!
        let none = try await store.bookingSetting(
            designerID: "d1", closedFrom: from, through: through, customerID: "c1", idempotencyKey: "k")
        XCTAssertNil(none.schedule)
        XCTAssertEqual(none.menu, [])
        XCTAssertNil(none.earlier)

        _ = try await store.createDesigner(schedule("d1"), menu: [style("s1"), style("s2", price: 1)])
        try await store.updateClosedDays(
            designerID: "d1",
            add: [
                LocalDay(year: 2027, month: 3, day: 10)!, LocalDay(year: 2027, month: 3, day: 12)!,
                LocalDay(year: 2027, month: 3, day: 14)!,
            ], remove: [])
        let first = reservation("r1", start: base, key: "k")
        _ = try await store.reserve(first)
        let setting = try await store.bookingSetting(
            designerID: "d1", closedFrom: from, through: through, customerID: "c1", idempotencyKey: "k")
        XCTAssertEqual(setting.schedule, schedule("d1"))
        XCTAssertEqual(setting.closedDays, [LocalDay(year: 2027, month: 3, day: 12)!], "only those in range")
        XCTAssertEqual(setting.menu, [style("s1"), style("s2", price: 1)])
        XCTAssertEqual(setting.earlier, first)
        let otherCustomer = try await store.bookingSetting(
            designerID: "d1", closedFrom: from, through: through, customerID: "c2", idempotencyKey: "k")
        XCTAssertNil(otherCustomer.earlier, "keys are per customer")
        let noKey = try await store.bookingSetting(
            designerID: "d1", closedFrom: from, through: through, customerID: "c1", idempotencyKey: nil)
        XCTAssertNil(noKey.earlier)
    }

    /// 20 concurrent reserves by one customer with room for 4 open: exactly 4 commit; the others throw
    /// `QuotaExceeded` and hold no cell.
    static func quotasHoldUnderConcurrentReserves(_ store: any BookingStore) async throws {
        let quotas = ReservationQuotas(
            open: Quota(name: "reservations.open", limit: 4, counted: "upcoming reservations"),
            perDay: Quota(name: "reservations.day", limit: 10, counted: "reservations made per day"))
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<20 {
                group.addTask {
                    let r = reservation("q\(index)", start: base + Int64(index) * hour)
                    do {
                        _ = try await store.reserve(r, quotas: quotas)
                        return true
                    } catch {
                        XCTAssertEqual(error as? QuotaExceeded, QuotaExceeded(quota: quotas.open))
                        return false
                    }
                }
            }
            var all: [Bool] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        XCTAssertEqual(outcomes.filter { $0 }.count, 4)
        let booked = try await store.bookedTimes(designerID: "d1", from: base, until: base + 20 * hour)
        XCTAssertEqual(booked.intervals.map { $0.upperBound - $0.lowerBound }.reduce(0, +), 4 * hour)
    }

    static func listsPageByStartAndStatus(_ store: any BookingStore) async throws {
        var all: [ReservationRecord] = []
        for index in 0..<5 {
            let r = reservation("r\(index)", start: base + Int64(index) * hour)
            _ = try await store.reserve(r)
            all.append(r)
        }
        let other = reservation("x", customer: "c2", start: base + 10 * hour)
        _ = try await store.reserve(other)
        _ = try await store.cancel(id: "r4", at: 1)
        let now = base + 2 * hour
        let upcoming = try await store.reservations(
            of: .customer("c1"), filter: .upcoming, now: now, after: nil, limit: 10)
        XCTAssertEqual(upcoming.map(\.id), ["r3"], "after now, confirmed")
        let past = try await store.reservations(of: .customer("c1"), filter: .past, now: now, after: nil, limit: 2)
        XCTAssertEqual(past.map(\.id), ["r2", "r1"])
        let older = try await store.reservations(
            of: .customer("c1"), filter: .past, now: now,
            after: ReservationPosition(key: past[1].startAtMilliseconds, id: past[1].id), limit: 2)
        XCTAssertEqual(older.map(\.id), ["r0"])
        let cancelled = try await store.reservations(
            of: .customer("c1"), filter: .cancelled, now: now, after: nil, limit: 5)
        XCTAssertEqual(cancelled.map(\.id), ["r4"])
        let designer = try await store.reservations(
            of: .designer("d1"), filter: .upcoming, now: now, after: nil, limit: 5)
        XCTAssertEqual(designer.map(\.id), ["r3", "x"])
        let window = try await store.designerReservations(designerID: "d1", from: base + hour, until: base + 4 * hour)
        XCTAssertEqual(window.map(\.id), ["r1", "r2", "r3"])
    }

    /// `delivery(job)`: outbox job `job`'s delivery from "account".
    static func purgeRemovesTheUserOncePerDelivery(
        _ store: any BookingStore, delivery: (String) -> Delivery
    ) async throws {
        let context = delivery("job-1")
        _ = try await store.createDesigner(schedule("d1"), menu: [style("s1")])
        _ = try await store.createDesigner(schedule("d2"), menu: [style("s2")])
        try await store.updateClosedDays(designerID: "d1", add: [LocalDay(year: 2027, month: 5, day: 5)!], remove: [])
        let a = reservation("a", customer: "c1", designer: "d1", start: base)
        let b = reservation("b", customer: "c2", designer: "d2", start: base)
        let c = reservation("c", customer: "c2", designer: "d1", start: base + hour)
        for r in [a, b, c] { _ = try await store.reserve(r) }
        let applied = try await store.purgeUser("d1", delivery: context, now: 1)
        XCTAssertTrue(applied)
        let schedule = try await store.schedule(designerID: "d1")
        XCTAssertNil(schedule)
        let menu = try await store.menu(designerID: "d1")
        XCTAssertEqual(menu, [])
        let stored = try await store.reservation(id: "a")
        XCTAssertNil(stored)
        let stored2 = try await store.reservation(id: "c")
        XCTAssertNil(stored2)
        let stored3 = try await store.reservation(id: "b")
        XCTAssertEqual(stored3, b)
        let held = try await store.bookedTimes(designerID: "d1", from: 0, until: .max)
        XCTAssertEqual(held, BookedTimes([]))
        let closedDays = try await store.closedDays(
            designerID: "d1", from: LocalDay(year: 2027, month: 1, day: 1)!,
            through: LocalDay(year: 2027, month: 12, day: 31)!)
        XCTAssertEqual(
            closedDays, [])
        let schedule2 = try await store.schedule(designerID: "d2")
        XCTAssertNotNil(schedule2)

        // A redelivery of the same job changes nothing (even what was added since); a new job applies.
        let later = reservation("a2", customer: "c1", designer: "d1", start: base + 5 * hour)
        _ = try await store.reserve(later)
        let applied2 = try await store.purgeUser("d1", delivery: context, now: 2)
        XCTAssertFalse(applied2)
        let stored4 = try await store.reservation(id: "a2")
        XCTAssertEqual(stored4, later)
        let applied3 = try await store.purgeUser("c1", delivery: delivery("job-2"), now: 3)
        XCTAssertTrue(applied3)
        let stored5 = try await store.reservation(id: "a2")
        XCTAssertNil(stored5)
    }
}

extension BookingStoreContract {
    /// Apps as tenants: two stores on one database, each of one app, never see each other's schedules,
    /// menus, closed days or reservations (a second engine builds its two stores the same way).
    static func tenantRowsStayInTheirApp(yedi: any BookingStore, other: any BookingStore) async throws {
        _ = try await other.createDesigner(schedule("z1"), menu: [style("zs1")])
        let day = LocalDay(year: 2027, month: 3, day: 12)!
        try await other.updateClosedDays(designerID: "z1", add: [day], remove: [])
        guard case .created = try await other.reserve(reservation("zr1", customer: "zc1", designer: "z1", start: base))
        else { return XCTFail("the other app's reservation is made") }

        let schedule = try await yedi.schedule(designerID: "z1")
        XCTAssertNil(schedule)
        let menu = try await yedi.menu(designerID: "z1")
        XCTAssertEqual(menu, [])
        let closed = try await yedi.closedDays(designerID: "z1", from: day, through: day)
        XCTAssertEqual(closed, [])
        let found = try await yedi.reservation(id: "zr1")
        XCTAssertNil(found)
        let cancelled = try await yedi.cancel(id: "zr1", at: base)
        XCTAssertNil(cancelled, "a YeDi cancel does not reach another app's reservation")
        let mine = try await yedi.reservations(
            of: .customer("zc1"), filter: .upcoming, now: 0, after: nil, limit: 10)
        XCTAssertEqual(mine, [])
        let designers = try await yedi.designerReservations(designerID: "z1", from: 0, until: base + hour)
        XCTAssertEqual(designers, [])

        let theirs = try await other.reservation(id: "zr1")
        XCTAssertEqual(theirs?.status, .confirmed, "still confirmed in its own app")
        let theirMenu = try await other.menu(designerID: "z1")
        XCTAssertEqual(theirMenu, [style("zs1")])
    }
}

// MARK: Replicas: several stores on one database, as several processes have

extension BookingStoreContract {
    /// 10 rounds, each of three overlapping reservations of one designer made at once through the
    /// replicas (an hour at :00 and one at :30, and two hours around both): exactly one confirmed per
    /// round, the others `slotTaken` and stored nowhere.
    static func overlappingReservationsOnReplicasConfirmOnePerOverlap(_ stores: [any BookingStore]) async throws {
        let (first, second, third) = (stores[0], stores[1], stores[2 % stores.count])
        let rounds = 10
        for round in 0..<rounds {
            let start = base + Int64(round) * 4 * hour
            let attempts: [(any BookingStore, ReservationRecord)] = [
                (first, reservation("a\(round)", customer: "ca", start: start + hour / 2)),
                (second, reservation("b\(round)", customer: "cb", start: start + hour)),
                (third, reservation("c\(round)", customer: "cc", start: start, minutes: 120)),
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
            let held = try await second.bookedTimes(designerID: "d1", from: start, until: start + 4 * hour)
            let confirmed = try await first.reservation(id: outcomes.first ?? "")
            XCTAssertEqual(
                held,
                BookedTimes(confirmed.map { [$0.startAtMilliseconds..<$0.endAtMilliseconds] } ?? []),
                "round \(round): only the confirmed reservation's cells are held")
        }
        let all = try await first.designerReservations(
            designerID: "d1", from: base, until: base + Int64(rounds) * 4 * hour)
        XCTAssertEqual(all.count, rounds)
    }

    /// The same customer and idempotency key on both replicas at once (a retry racing its first attempt):
    /// one reservation is stored and both answer it, never "taken"; with and without quotas (the
    /// customer's lock) and for the same or another time.
    static func theSameIdempotencyKeyOnTwoReplicasAnswersOneReservation(_ stores: [any BookingStore]) async throws {
        let (first, second) = (stores[0], stores[1])
        let quotas = ReservationQuotas(
            open: Quota(name: "reservations.open", limit: 100, counted: "upcoming reservations"),
            perDay: Quota(name: "reservations.day", limit: 100, counted: "reservations made per day"))
        for round in 0..<10 {
            let start = base + Int64(round) * 4 * hour
            let key = "key-\(round)"
            let retryStart = round % 4 < 2 ? start : start + 2 * hour
            let limits = round % 2 == 0 ? quotas : nil
            let attempts: [(any BookingStore, ReservationRecord)] = [
                (first, reservation("x\(round)", start: start, key: key)),
                (second, reservation("y\(round)", start: retryStart, key: key)),
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
            let held = try await second.bookedTimes(designerID: "d1", from: start, until: start + 4 * hour)
            XCTAssertEqual(held.intervals.map { $0.upperBound - $0.lowerBound }, [hour], "one hour held")
        }
    }

    /// 20 reserves of one customer at once, spread over the replicas, with room for 4 open: exactly 4.
    static func quotasHoldAcrossReplicas(_ stores: [any BookingStore]) async throws {
        let first = stores[0]
        let quotas = ReservationQuotas(
            open: Quota(name: "reservations.open", limit: 4, counted: "upcoming reservations"),
            perDay: Quota(name: "reservations.day", limit: 10, counted: "reservations made per day"))
        let made = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<20 {
                let store = stores[index % stores.count]
                group.addTask {
                    do {
                        _ = try await store.reserve(
                            reservation("q\(index)", start: base + Int64(index) * hour), quotas: quotas)
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

final class SQLiteBookingStoreTests: XCTestCase {
    private var database: ServiceDatabase!
    private var store: SQLiteBookingStore!

    override func setUpWithError() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-booking-store-\(UUID().uuidString)").path
        database = try ServiceDatabase.open(
            directory: directory, name: "booking", migrations: BookingServiceDefinition.migrate,
            logger: Logger(label: "test"))
        store = SQLiteBookingStore(database: database)
        addTeardownBlock { [database] in
            try database?.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    func testSchedulesAndMenusRoundTrip() async throws {
        try await BookingStoreContract.schedulesAndMenusRoundTrip(store)
    }

    /// Three stores on the database, as three replicas would have (SQLite has one writer: they take turns).
    private var replicas: [any BookingStore] {
        [store!, SQLiteBookingStore(database: database), SQLiteBookingStore(database: database)]
    }

    func testOverlappingReservationsOnReplicasConfirmOnePerOverlap() async throws {
        try await BookingStoreContract.overlappingReservationsOnReplicasConfirmOnePerOverlap(replicas)
    }

    func testTheSameIdempotencyKeyOnTwoReplicasAnswersOneReservation() async throws {
        try await BookingStoreContract.theSameIdempotencyKeyOnTwoReplicasAnswersOneReservation(replicas)
    }

    func testQuotasHoldAcrossReplicas() async throws {
        try await BookingStoreContract.quotasHoldAcrossReplicas(replicas)
    }

    func testTenantRowsStayInTheirApp() async throws {
        try await BookingStoreContract.tenantRowsStayInTheirApp(
            yedi: store, other: SQLiteBookingStore(database: database, app: "zipadoo"))
    }

    func testOverlappingReservationsCannotBothBeConfirmed() async throws {
        try await BookingStoreContract.overlappingReservationsCannotBothBeConfirmed(store)
    }

    func testIdempotencyKeysAnswerTheFirstReservation() async throws {
        try await BookingStoreContract.idempotencyKeysAnswerTheFirstReservation(store)
    }

    func testBookingSettingReadsWhatAReservationIsCheckedAgainst() async throws {
        try await BookingStoreContract.bookingSettingReadsWhatAReservationIsCheckedAgainst(store)
    }

    func testQuotasHoldUnderConcurrentReserves() async throws {
        try await BookingStoreContract.quotasHoldUnderConcurrentReserves(store)
    }

    func testListsPageByStartAndStatus() async throws {
        try await BookingStoreContract.listsPageByStartAndStatus(store)
    }

    func testPurgeRemovesTheUserOncePerDelivery() async throws {
        try await BookingStoreContract.purgeRemovesTheUserOncePerDelivery(store, delivery: Self.delivery)
    }

    /// An outbox job's PurgeUser delivery from "account", as a handler makes it from its call.
    static func delivery(_ job: String) -> Delivery {
        Delivery(
            ServerContext(
                method: YediBooking.BookingService.Method.purgeUser.descriptor,
                metadata: [Outbox.idempotencyKeyMetadata: job], deadline: nil, peer: PeerInfo(address: "test"),
                caller: .service(name: "account"), logger: Logger(label: "test")))
    }
}

/// Async XCTest helper: the reservation is refused with `slotTaken` and not stored.
func assertTaken(_ store: any BookingStore, _ reservation: ReservationRecord, line: UInt = #line) async {
    do {
        _ = try await store.reserve(reservation)
        XCTFail("\(reservation.id) was stored over another reservation", line: line)
    } catch {
        XCTAssertEqual(error as? BookingStoreError, .slotTaken, line: line)
    }
}
