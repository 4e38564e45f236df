import Foundation
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// Every booking rule through the RPCs, with the injected clock: defaults from the shop, closed dates and
/// weekdays, breaks, past hours, working hours, the slot grid, 30-minute slots and a zone with DST.
final class ScheduleRuleTests: XCTestCase {
    private var fixture: BookingFixture!

    override func setUp() async throws {
        fixture = try await BookingFixture.start()
    }

    override func tearDown() async throws {
        try await fixture.stop()
    }

    private typealias F = BookingFixture

    /// A designer working 09:00–18:00 Seoul, lunch 12:00–13:00, closed on Sundays and on 2027-03-12.
    private func setUpDesigner(_ id: String = "designer-1") async throws -> YediBooking.Schedule {
        try await fixture.addDesigner(id, opening: 10, closing: 20)
        _ = try await fixture.booking.updateSchedule(
            .init(
                schedule: .init(
                    openingMinute: 540, closingMinute: 1080, timeZone: "Asia/Seoul",
                    breaks: [.init(startMinute: 720, endMinute: 780)], closedWeekdays: [.sunday], slotMinutes: 60)),
            options: try fixture.designer(id))
        return try await fixture.booking.updateClosedDays(
            .init(add: [F.date(2027, 3, 12)]), options: try fixture.designer(id))
    }

    private func reserve(
        _ start: Date, customer: String = "customer-1", designer: String = "designer-1", key: String = ""
    ) async throws -> YediBooking.Reservation {
        let menu = try await fixture.booking.getMenu(.init(designerID: designer))
        return try await fixture.booking.createReservation(
            .init(designerID: designer, startAtMs: F.ms(start), styleIDs: [menu.styles[0].id], idempotencyKey: key),
            options: try fixture.customer(customer))
    }

    private func refusal(_ start: Date) async -> RPCError? {
        await rpcError { _ = try await self.reserve(start) }
    }

    /// AccountService's `SetUpDesigner` (sent through its outbox when a designer signs up) stores the
    /// schedule from the shop hours and the catalogue menu; reads only read from then on.
    func testANewDesignerStartsFromTheShopHoursAndTheCatalogue() async throws {
        try await fixture.addDesigner("designer-1", opening: 10, closing: 20)
        let schedule = try await fixture.booking.getSchedule(.init(designerID: "designer-1"))
        XCTAssertEqual(schedule.openingMinute, 600)
        XCTAssertEqual(schedule.closingMinute, 1200)
        XCTAssertEqual(schedule.slotMinutes, 60)
        XCTAssertEqual(schedule.timeZone, "Asia/Seoul")
        let menu = try await fixture.booking.getMenu(.init(designerID: "designer-1"))
        XCTAssertEqual(menu.styles.count, 12)
        XCTAssertEqual(menu.styles.first?.name, "레이어드컷")
        XCTAssertEqual(menu.styles.first?.priceKRW, 45_000)
        XCTAssertEqual(menu.styles.first?.category, .cut)
        XCTAssertEqual(
            menu.styles.filter { $0.category == .perm }.map(\.priceKRW), [85_000, 86_000, 80_000, 85_000, 92_000])
        XCTAssertEqual(menu.styles.last?.name, "부분염색")
        XCTAssertEqual(fixture.shops.calls, 0, "set up from SetUpDesigner's hours: AccountService is never asked")

        // A repeated SetUpDesigner (the outbox retries) keeps what the designer has since changed.
        _ = try await fixture.booking.updateSchedule(
            .init(schedule: .init(openingMinute: 540, closingMinute: 1080, timeZone: "Asia/Seoul", slotMinutes: 30)),
            options: try fixture.designer("designer-1"))
        try await fixture.addDesigner("designer-1", opening: 11, closing: 19)
        let kept = try await fixture.booking.getSchedule(.init(designerID: "designer-1"))
        XCTAssertEqual([kept.openingMinute, kept.closingMinute, kept.slotMinutes], [540, 1080, 30])
        let keptMenu = try await fixture.booking.getMenu(.init(designerID: "designer-1"))
        XCTAssertEqual(keptMenu.styles.map(\.id), menu.styles.map(\.id), "the menu is not made twice")
    }

    /// Public reads never write and never call AccountService: an id with no schedule here is NOT_FOUND,
    /// whether or not AccountService is up, and nothing is stored for it.
    func testReadsOfADesignerNotSetUpAnswerNotFoundWithoutAskingAccountService() async throws {
        fixture.shops.add("designer-1")
        for down in [false, true] {
            fixture.shops.down = down
            let schedule = await statusCode {
                _ = try await self.fixture.booking.getSchedule(.init(designerID: "designer-1"))
            }
            let menu = await statusCode { _ = try await self.fixture.booking.getMenu(.init(designerID: "designer-1")) }
            let free = await statusCode {
                _ = try await self.fixture.booking.listFreeSlots(
                    .init(designerID: "designer-1", from: F.date(2027, 3, 10), to: F.date(2027, 3, 11)))
            }
            let booking = await statusCode {
                _ = try await self.fixture.booking.createReservation(
                    .init(designerID: "designer-1", startAtMs: F.ms(F.seoul(2027, 3, 11, hour: 10)), styleIDs: ["s"]),
                    options: try self.fixture.customer())
            }
            XCTAssertEqual([schedule, menu, free, booking], Array(repeating: .notFound, count: 4), "down: \(down)")
        }
        XCTAssertEqual(fixture.shops.calls, 0)
        let stored = try await fixture.count("SELECT COUNT(*) FROM schedule")
        XCTAssertEqual(stored, 0)
    }

    /// A designer whose SetUpDesigner has not arrived yet (or who signed up before it existed) is set up
    /// by their own first call from AccountService's shop hours; with AccountService down that call says
    /// "try again" rather than making hours up.
    func testADesignersOwnCallSetsUpASchedulePendingSetUpDesigner() async throws {
        fixture.shops.add("designer-2", opening: 8, closing: 16)
        fixture.shops.down = true
        let edit = await statusCode {
            _ = try await self.fixture.booking.updateMenu(
                .init(styles: [.init(name: "컷", category: .cut, priceKRW: 1, durationMinutes: 30)]),
                options: try self.fixture.designer("designer-2"))
        }
        XCTAssertEqual(edit, .unavailable)
        let nothing = try await fixture.count("SELECT COUNT(*) FROM schedule")
        XCTAssertEqual(nothing, 0, "no schedule made up from defaults")
        fixture.shops.down = false
        let menu = try await fixture.booking.updateMenu(
            .init(styles: [.init(name: "컷", category: .cut, priceKRW: 1, durationMinutes: 30)]),
            options: try fixture.designer("designer-2"))
        XCTAssertEqual(menu.styles.map(\.name), ["컷"])
        let schedule = try await fixture.booking.getSchedule(.init(designerID: "designer-2"))
        XCTAssertEqual([schedule.openingMinute, schedule.closingMinute], [480, 960], "the shop's hours")
    }

    func testFreeSlotsLeaveOutClosedDaysWeeklyClosedDaysBreaksAndPastHours() async throws {
        let schedule = try await setUpDesigner()
        XCTAssertEqual(schedule.closedDays, [F.date(2027, 3, 12)])
        XCTAssertEqual(schedule.closedWeekdays, [.sunday])
        fixture.clock.set(F.seoul(2027, 3, 10, hour: 10, minute: 30))  // a Wednesday
        let free = try await fixture.booking.listFreeSlots(
            .init(designerID: "designer-1", from: F.date(2027, 3, 10), to: F.date(2027, 3, 14)))
        XCTAssertEqual(free.days.map(\.closed), [false, false, true, false, true])
        func hours(_ day: YediBooking.DaySlots) -> [Int] {
            day.freeStartAtMs.map { (Int($0 / 1_000) + 9 * 3_600) % 86_400 / 3_600 }
        }
        XCTAssertEqual(hours(free.days[0]), [11, 13, 14, 15, 16, 17], "09 and 10 are past, 12 is lunch")
        XCTAssertEqual(hours(free.days[1]), [9, 10, 11, 13, 14, 15, 16, 17])
        XCTAssertEqual(free.days[2].freeStartAtMs, [])
        XCTAssertEqual(hours(free.days[3]), [9, 10, 11, 13, 14, 15, 16, 17])
        XCTAssertEqual(free.days[0].freeStartAtMs.first, F.ms(F.seoul(2027, 3, 10, hour: 11)))
    }

    func testReservationsAreRefusedOffTheSchedule() async throws {
        _ = try await setUpDesigner()
        fixture.clock.set(F.seoul(2027, 3, 10, hour: 10, minute: 30))
        let cases: [(Date, String)] = [
            (F.seoul(2027, 3, 12, hour: 10), "closed on 2027-03-12"),
            (F.seoul(2027, 3, 14, hour: 10), "closed every Sunday"),
            (F.seoul(2027, 3, 11, hour: 12), "in a break"),
            (F.seoul(2027, 3, 10, hour: 10), "in the past"),
            (F.seoul(2027, 3, 10, hour: 9), "in the past"),
            (F.seoul(2027, 3, 11, hour: 8), "outside the working hours"),
            (F.seoul(2027, 3, 11, hour: 18), "outside the working hours"),
            (F.seoul(2027, 3, 11, hour: 9, minute: 30), "not a slot start"),
            (F.seoul(2027, 3, 11, hour: 9).addingTimeInterval(0.001), "not a slot start"),
            (F.seoul(2028, 6, 1, hour: 9), "at most a year ahead"),
        ]
        for (start, reason) in cases {
            let error = await refusal(start)
            XCTAssertEqual(error?.code, .failedPrecondition, "\(start): \(String(describing: error))")
            XCTAssertTrue(error?.message.contains(reason) == true, "\(reason): \(String(describing: error?.message))")
        }
        let count = try await fixture.count("SELECT COUNT(*) FROM reservation")
        XCTAssertEqual(count, 0)

        let booked = try await reserve(F.seoul(2027, 3, 11, hour: 9))
        XCTAssertEqual(booked.status, .confirmed)
        XCTAssertEqual(booked.totalPriceKRW, 45_000)
        XCTAssertEqual(booked.endAtMs - booked.startAtMs, 3_600_000)
        XCTAssertEqual(booked.daysLeft, 1)
        let taken = await rpcError { _ = try await self.reserve(F.seoul(2027, 3, 11, hour: 9), customer: "customer-2") }
        XCTAssertEqual(taken?.code, .alreadyExists)
        let free = try await fixture.booking.listFreeSlots(
            .init(designerID: "designer-1", from: F.date(2027, 3, 11), to: F.date(2027, 3, 11)))
        XCTAssertFalse(free.days[0].freeStartAtMs.contains(booked.startAtMs))
        XCTAssertEqual(free.days[0].freeStartAtMs.count, 7)
    }

    func testThirtyMinuteSlotsAndALaterChangeOfLengthNeverOverlap() async throws {
        try await fixture.addDesigner("designer-1")
        _ = try await fixture.booking.updateSchedule(
            .init(schedule: .init(openingMinute: 600, closingMinute: 720, timeZone: "Asia/Seoul", slotMinutes: 30)),
            options: try fixture.designer())
        let day = F.date(2027, 3, 11)
        var free = try await fixture.booking.listFreeSlots(.init(designerID: "designer-1", from: day, to: day))
        XCTAssertEqual(
            free.days[0].freeStartAtMs,
            [(10, 0), (10, 30), (11, 0), (11, 30)].map { F.ms(F.seoul(2027, 3, 11, hour: $0.0, minute: $0.1)) })
        let half = try await reserve(F.seoul(2027, 3, 11, hour: 10, minute: 30))
        XCTAssertEqual(half.endAtMs - half.startAtMs, 1_800_000)
        let offGrid = await refusal(F.seoul(2027, 3, 11, hour: 10, minute: 15))
        XCTAssertEqual(offGrid?.code, .failedPrecondition)

        // The designer moves to hour slots: 10:00–11:00 would overlap the 10:30 reservation.
        _ = try await fixture.booking.updateSchedule(
            .init(schedule: .init(openingMinute: 600, closingMinute: 720, timeZone: "Asia/Seoul", slotMinutes: 60)),
            options: try fixture.designer())
        free = try await fixture.booking.listFreeSlots(.init(designerID: "designer-1", from: day, to: day))
        XCTAssertEqual(free.days[0].freeStartAtMs, [F.ms(F.seoul(2027, 3, 11, hour: 11))])
        let overlap = await rpcError {
            _ = try await self.reserve(F.seoul(2027, 3, 11, hour: 10), customer: "customer-2")
        }
        XCTAssertEqual(overlap?.code, .alreadyExists)
        _ = try await reserve(F.seoul(2027, 3, 11, hour: 11), customer: "customer-2")
    }

    func testNewYorkSlotsAcrossSpringForwardAndFallBack() async throws {
        fixture.clock.set(F.local("America/New_York", 2027, 3, 13, hour: 23, minute: 30))
        try await fixture.addDesigner("designer-1", zone: "America/New_York")
        let schedule2 = try await fixture.booking.getSchedule(.init(designerID: "designer-1")).timeZone
        XCTAssertEqual(schedule2, "America/New_York")
        _ = try await fixture.booking.updateSchedule(
            .init(
                schedule: .init(openingMinute: 0, closingMinute: 360, timeZone: "America/New_York", slotMinutes: 60)),
            options: try fixture.designer())
        let hour: Int64 = 3_600_000
        func utc(_ month: Int, _ day: Int, _ hour: Int) -> Int64 {
            F.ms(F.local("UTC", 2027, month, day, hour: hour))
        }
        // 2027-03-14: 02:00 EST becomes 03:00 EDT. Local 00, 01, 03, 04, 05; 02:00 does not exist.
        let spring = try await fixture.booking.listFreeSlots(
            .init(designerID: "designer-1", from: F.date(2027, 3, 14), to: F.date(2027, 3, 15)))
        XCTAssertEqual(
            spring.days[0].freeStartAtMs, [utc(3, 14, 5), utc(3, 14, 6), utc(3, 14, 7), utc(3, 14, 8), utc(3, 14, 9)])
        XCTAssertEqual(spring.days[1].freeStartAtMs.first, utc(3, 15, 4), "midnight EDT the day after")
        XCTAssertEqual(spring.days[1].freeStartAtMs.count, 6)

        // 03:00 EDT is 1 hour after 01:00 EST; it is booked, D-1 from 23:30 the evening before.
        let booked = try await reserve(Date(timeIntervalSince1970: TimeInterval(utc(3, 14, 7) / 1_000)))
        XCTAssertEqual(booked.startAtMs - utc(3, 14, 6), hour)
        XCTAssertEqual(booked.daysLeft, 1)
        XCTAssertEqual(booked.timeZone, "America/New_York")
        let halfPast = await refusal(Date(timeIntervalSince1970: TimeInterval(utc(3, 14, 6) / 1_000 + 1_800)))
        XCTAssertEqual(halfPast?.code, .failedPrecondition)

        // 2027-11-07: 02:00 EDT becomes 01:00 EST. The repeated 01:00 is offered once (its first occurrence).
        let fall = try await fixture.booking.listFreeSlots(
            .init(designerID: "designer-1", from: F.date(2027, 11, 7), to: F.date(2027, 11, 7)))
        XCTAssertEqual(
            fall.days[0].freeStartAtMs,
            [utc(11, 7, 4), utc(11, 7, 5), utc(11, 7, 7), utc(11, 7, 8), utc(11, 7, 9), utc(11, 7, 10)])
        let secondOneOClock = await refusal(Date(timeIntervalSince1970: TimeInterval(utc(11, 7, 6) / 1_000)))
        XCTAssertEqual(secondOneOClock?.code, .failedPrecondition)
        XCTAssertTrue(secondOneOClock?.message.contains("not a slot start") == true)
        let firstOneOClock = try await reserve(Date(timeIntervalSince1970: TimeInterval(utc(11, 7, 5) / 1_000)))
        XCTAssertEqual(firstOneOClock.endAtMs, utc(11, 7, 6))
    }

    func testScheduleEditsAreValidated() async throws {
        try await fixture.addDesigner("designer-1")
        func update(_ schedule: YediBooking.Schedule) async -> RPCError? {
            await rpcError {
                _ = try await self.fixture.booking.updateSchedule(
                    .init(schedule: schedule), options: try self.fixture.designer())
            }
        }
        let good = YediBooking.Schedule(
            openingMinute: 540, closingMinute: 1260, timeZone: "Asia/Seoul", slotMinutes: 60)
        var bad: [(YediBooking.Schedule, String)] = []
        var schedule = good
        schedule.timeZone = "Mars/Olympus_Mons"
        bad.append((schedule, "time_zone"))
        schedule = good
        schedule.slotMinutes = 7
        bad.append((schedule, "slot_minutes"))
        schedule.slotMinutes = 0
        bad.append((schedule, "slot_minutes"))
        schedule = good
        schedule.closingMinute = 500
        bad.append((schedule, "closing_minute"))
        schedule = good
        schedule.openingMinute = -60
        bad.append((schedule, "opening_minute"))
        schedule = good
        schedule.breaks = [.init(startMinute: 480, endMinute: 600)]
        bad.append((schedule, "breaks"))
        schedule.breaks = [.init(startMinute: 720, endMinute: 800), .init(startMinute: 780, endMinute: 840)]
        bad.append((schedule, "breaks"))
        schedule = good
        schedule.closedWeekdays = [.unspecified]
        bad.append((schedule, "closed_weekdays"))
        schedule = good
        schedule.closedDays = [F.date(2027, 5, 5)]
        bad.append((schedule, "closed_days"))
        for (schedule, field) in bad {
            let error = await update(schedule)
            XCTAssertEqual(error?.code, .invalidArgument, field)
            XCTAssertTrue(
                error?.message.hasPrefix("schedule.\(field)") == true, "\(field): \(String(describing: error))")
        }
        let unchanged = try await fixture.booking.getSchedule(.init(designerID: "designer-1"))
        XCTAssertEqual(unchanged.openingMinute, 540)

        // Closed dates: any future month, removable; never in the past.
        let added = try await fixture.booking.updateClosedDays(
            .init(add: [F.date(2027, 12, 25), F.date(2028, 2, 29)]), options: try fixture.designer())
        XCTAssertEqual(added.closedDays, [F.date(2027, 12, 25), F.date(2028, 2, 29)])
        let removed = try await fixture.booking.updateClosedDays(
            .init(remove: [F.date(2027, 12, 25)]), options: try fixture.designer())
        XCTAssertEqual(removed.closedDays, [F.date(2028, 2, 29)])
        for date in [F.date(2027, 3, 9), F.date(2027, 2, 30), F.date(2030, 1, 1)] {
            let code = await statusCode {
                _ = try await self.fixture.booking.updateClosedDays(
                    .init(add: [date]), options: try self.fixture.designer())
            }
            XCTAssertEqual(code, .invalidArgument, "\(date)")
        }
        // A designer naming someone else's schedule.
        var other = good
        other.designerID = "designer-2"
        let refusal = await update(other)?.code
        XCTAssertEqual(refusal, .permissionDenied)
    }

    func testFreeSlotRangesAreValidated() async throws {
        try await fixture.addDesigner("designer-1")
        let cases: [(YediBooking.ListFreeSlotsRequest, StatusCode)] = [
            (.init(designerID: "designer-1", from: F.date(2027, 3, 1), to: F.date(2027, 5, 2)), .invalidArgument),
            (.init(designerID: "designer-1", from: F.date(2027, 3, 5), to: F.date(2027, 3, 4)), .invalidArgument),
            (.init(designerID: "designer-1", from: F.date(2027, 3, 5)), .invalidArgument),
            (.init(designerID: "designer-1", from: F.date(2027, 13, 5), to: F.date(2027, 3, 4)), .invalidArgument),
            (.init(designerID: "", from: F.date(2027, 3, 5), to: F.date(2027, 3, 5)), .invalidArgument),
            (.init(designerID: "ghost", from: F.date(2027, 3, 5), to: F.date(2027, 3, 5)), .notFound),
        ]
        for (request, expected) in cases {
            let code = await statusCode { _ = try await self.fixture.booking.listFreeSlots(request) }
            XCTAssertEqual(code, expected, "\(request)")
        }
        let longest = try await fixture.booking.listFreeSlots(
            .init(designerID: "designer-1", from: F.date(2027, 3, 1), to: F.date(2027, 3, 31)))
        XCTAssertEqual(longest.days.count, 31)
    }
}
