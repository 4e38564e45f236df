import Foundation
import XCTest

@testable import BookingService

/// The pure time model under the slots: calendar arithmetic on local dates, and local times ↔ instants
/// in zones with unusual changes (a 30-minute DST shift, a spring-forward at midnight).
final class TimeModelTests: XCTestCase {
    private func utc(_ text: String) -> Int64 {
        Int64(ISO8601DateFormatter().date(from: text)!.timeIntervalSince1970 * 1_000)
    }

    func testLocalDayArithmetic() throws {
        XCTAssertEqual(LocalDay(year: 1970, month: 1, day: 1)?.dayNumber, 0)
        XCTAssertEqual(LocalDay(year: 1969, month: 12, day: 31)?.dayNumber, -1)
        XCTAssertNotNil(LocalDay(year: 2028, month: 2, day: 29))
        XCTAssertNil(LocalDay(year: 2027, month: 2, day: 29))
        XCTAssertNil(LocalDay(year: 2100, month: 2, day: 29))
        XCTAssertNotNil(LocalDay(year: 2000, month: 2, day: 29))
        XCTAssertNil(LocalDay(year: 2027, month: 4, day: 31))
        XCTAssertNil(LocalDay(year: 2027, month: 0, day: 1))
        XCTAssertEqual(LocalDay(year: 2027, month: 3, day: 14)?.isoWeekday, 7, "a Sunday")
        XCTAssertEqual(LocalDay(year: 2027, month: 3, day: 10)?.isoWeekday, 3, "a Wednesday")
        XCTAssertEqual(LocalDay(year: 1970, month: 1, day: 1)?.isoWeekday, 4, "a Thursday")
        let start = try XCTUnwrap(LocalDay(year: 2026, month: 12, day: 30))
        XCTAssertEqual(start.adding(days: 3), LocalDay(year: 2027, month: 1, day: 2))
        XCTAssertEqual(start.adding(days: 61), LocalDay(year: 2027, month: 3, day: 1))
        for number in stride(from: -800_000, through: 800_000, by: 997) {
            XCTAssertEqual(LocalDay(dayNumber: number).dayNumber, number)
        }
        XCTAssertEqual(LocalDay(key: "2027-03-05"), LocalDay(year: 2027, month: 3, day: 5))
        XCTAssertEqual(LocalDay(year: 2027, month: 3, day: 5)?.key, "2027-03-05")
        XCTAssertNil(LocalDay(key: "2027-02-30"))
    }

    func testSeoulHasNoSurprises() throws {
        let seoul = try XCTUnwrap(ShopClock(identifier: "Asia/Seoul"))
        let day = try XCTUnwrap(LocalDay(year: 2027, month: 3, day: 11))
        XCTAssertEqual(seoul.instant(day, minute: 600), utc("2027-03-11T01:00:00Z"))
        XCTAssertEqual(seoul.startOfDay(day), utc("2027-03-10T15:00:00Z"))
        let local = seoul.local(utc("2027-03-10T15:30:00Z"))
        XCTAssertEqual(local.day, day)
        XCTAssertEqual(local.minute, 30)
        XCTAssertEqual(seoul.local(utc("2027-03-10T14:59:00Z")).day, LocalDay(year: 2027, month: 3, day: 10))
        XCTAssertNil(ShopClock(identifier: "Mars/Olympus_Mons"))
        XCTAssertNil(ShopClock(identifier: ""))
    }

    func testLordHoweRepeatsHalfAnHour() throws {
        // 2027-04-04 02:00 (+11:00) becomes 01:30 (+10:30): 01:30–02:00 happens twice.
        let zone = try XCTUnwrap(ShopClock(identifier: "Australia/Lord_Howe"))
        let day = try XCTUnwrap(LocalDay(year: 2027, month: 4, day: 4))
        XCTAssertEqual(zone.instant(day, minute: 90), utc("2027-04-03T14:30:00Z"), "the first 01:30")
        XCTAssertEqual(zone.local(utc("2027-04-03T14:30:00Z")).minute, 90)
        XCTAssertEqual(zone.local(utc("2027-04-03T15:00:00Z")).minute, 90, "the second 01:30")
        XCTAssertEqual(zone.instant(day, minute: 120), utc("2027-04-03T15:30:00Z"))
    }

    func testSantiagoSkipsMidnight() throws {
        // Chile springs forward at 24:00 on the first Saturday of September: 2027-09-05 starts at 01:00.
        let zone = try XCTUnwrap(ShopClock(identifier: "America/Santiago"))
        let day = try XCTUnwrap(LocalDay(year: 2027, month: 9, day: 5))
        XCTAssertNil(zone.instant(day, minute: 0))
        XCTAssertNil(zone.instant(day, minute: 30))
        XCTAssertEqual(zone.instant(day, minute: 60), utc("2027-09-05T04:00:00Z"))
        XCTAssertEqual(zone.startOfDay(day), utc("2027-09-05T04:00:00Z"))
        XCTAssertEqual(zone.local(utc("2027-09-05T03:59:00Z")).day, LocalDay(year: 2027, month: 9, day: 4))
    }

    func testSlotGridSkipsTheMissingHourAndRefusesTheRepeatedOne() throws {
        let clock = try XCTUnwrap(ShopClock(identifier: "America/New_York"))
        let schedule = ScheduleRecord(
            designerID: "d", openingMinute: 0, closingMinute: 240, slotMinutes: 30, timeZone: "America/New_York",
            breaks: [BreakRange(start: 180, end: 210)], closedWeekdays: [], updatedAtMilliseconds: 0)
        let grid = SlotGrid(schedule: schedule, clock: clock, closedDays: [])
        let spring = try XCTUnwrap(LocalDay(year: 2027, month: 3, day: 14))
        XCTAssertEqual(grid.slots(on: spring).map(\.minute), [0, 30, 60, 90, 180, 210], "02:00 and 02:30 do not exist")
        XCTAssertEqual(grid.slots(on: spring).map(\.inBreak), [false, false, false, false, true, false])
        let fall = try XCTUnwrap(LocalDay(year: 2027, month: 11, day: 7))
        XCTAssertEqual(grid.slots(on: fall).count, 8)
        let now = utc("2027-01-01T00:00:00Z")
        XCTAssertNil(grid.refusal(utc("2027-11-07T05:30:00Z"), now: now), "the first 01:30 (EDT)")
        XCTAssertNotNil(grid.refusal(utc("2027-11-07T06:30:00Z"), now: now), "the second 01:30 (EST)")
        XCTAssertEqual(grid.refusal(utc("2027-03-14T07:00:00Z"), now: now), "start_at_ms: the slot is in a break")
    }
}

/// Slots are checked against bookings as intervals: touching is free, any overlap is booked.
final class BookedTimesTests: XCTestCase {
    func testOverlapIsAnySharedMomentAndTouchingIsFree() {
        let booked = BookedTimes([300..<400, 100..<200])
        XCTAssertEqual(booked.intervals, [100..<200, 300..<400], "sorted")
        XCTAssertFalse(booked.overlaps(0, 100), "ends where a booking starts")
        XCTAssertFalse(booked.overlaps(200, 300), "between two bookings")
        XCTAssertTrue(booked.overlaps(150, 160), "inside")
        XCTAssertTrue(booked.overlaps(50, 450), "around both")
        XCTAssertTrue(booked.overlaps(399, 500), "the last moment")
        XCTAssertFalse(booked.overlaps(400, 500))
        XCTAssertFalse(BookedTimes([]).overlaps(0, .max))
    }
}
