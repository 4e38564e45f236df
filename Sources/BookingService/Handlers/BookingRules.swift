import Foundation
import RPCCore
import ServiceRuntime
import YediProto

/// Field validation of BookingService requests: each failure is INVALID_ARGUMENT naming the field.
enum BookingRules {
    /// Days one `ListFreeSlots` call covers: it is anonymous, and each day is up to 288 slots to check.
    /// The app shows a month; a client wanting more asks again from the next day.
    static let maximumRangeDays = 31
    static let closedDayHorizonDays = 731
    static let bookingHorizonMilliseconds: Int64 = 366 * 86_400_000

    static func invalid(_ field: String, _ problem: String) -> RPCError { FieldRule.invalid(field, problem) }

    static func id(_ value: String, field: String) throws(RPCError) -> String { try FieldRule.id(value, field: field) }

    static func day(_ value: YediCommon.LocalDate?, field: String) throws(RPCError) -> LocalDay {
        guard let value else { throw invalid(field, "required") }
        guard let day = LocalDay(year: Int(value.year), month: Int(value.month), day: Int(value.day)) else {
            throw invalid(field, "not a date")
        }
        return day
    }

    /// A schedule from a designer's update (closed dates are changed separately).
    static func schedule(_ value: YediBooking.Schedule?, designerID: String, now: Int64) throws(RPCError)
        -> ScheduleRecord
    {
        guard let value else { throw invalid("schedule", "required") }
        guard value.closedDays.isEmpty else {
            throw invalid("schedule.closed_days", "change them with UpdateClosedDays")
        }
        let opening = Int(value.openingMinute)
        let closing = Int(value.closingMinute)
        let slot = Int(value.slotMinutes)
        guard (0...1435).contains(opening), opening % 5 == 0 else {
            throw invalid("schedule.opening_minute", "0–1435, a multiple of 5")
        }
        guard (5...1440).contains(closing), closing % 5 == 0, closing > opening else {
            throw invalid("schedule.closing_minute", "after the opening, at most 1440, a multiple of 5")
        }
        guard (5...720).contains(slot), slot % 5 == 0 else {
            throw invalid("schedule.slot_minutes", "5–720, a multiple of 5")
        }
        guard closing - opening >= slot else {
            throw invalid("schedule.slot_minutes", "longer than the working hours")
        }
        guard ShopClock(identifier: value.timeZone) != nil else {
            throw invalid("schedule.time_zone", "not an IANA time zone name (for example Asia/Seoul)")
        }
        guard value.breaks.count <= 10 else { throw invalid("schedule.breaks", "at most 10") }
        let breaks = value.breaks.map { BreakRange(start: Int($0.startMinute), end: Int($0.endMinute)) }
            .sorted { $0.start < $1.start }
        for (index, range) in breaks.enumerated() {
            guard range.start % 5 == 0, range.end % 5 == 0, range.start < range.end, range.start >= opening,
                range.end <= closing
            else {
                throw invalid("schedule.breaks", "each within the working hours, start before end, multiples of 5")
            }
            if index > 0, breaks[index - 1].end > range.start { throw invalid("schedule.breaks", "overlap") }
        }
        var weekdays = Set<Int>()
        for weekday in value.closedWeekdays {
            guard (1...7).contains(weekday.rawValue) else { throw invalid("schedule.closed_weekdays", "not a weekday") }
            weekdays.insert(Int(weekday.rawValue))
        }
        return ScheduleRecord(
            designerID: designerID, openingMinute: opening, closingMinute: closing, slotMinutes: slot,
            timeZone: value.timeZone, breaks: breaks, closedWeekdays: weekdays.sorted(), updatedAtMilliseconds: now)
    }

    /// A designer's new menu; `existing` ids may be kept, new styles get `newID()`.
    static func menu(_ styles: [YediBooking.Style], existing: Set<String>, newID: () -> String) throws(RPCError)
        -> [StyleRecord]
    {
        guard (1...50).contains(styles.count) else { throw invalid("styles", "1–50 styles") }
        var seen = Set<String>()
        var records: [StyleRecord] = []
        for (index, style) in styles.enumerated() {
            let field = "styles[\(index)]"
            var id = style.id
            if id.isEmpty {
                id = newID()
            } else if !existing.contains(id) {
                throw invalid("\(field).id", "not a style of your menu (leave it empty for a new style)")
            }
            guard seen.insert(id).inserted else { throw invalid("\(field).id", "listed twice") }
            let name = style.name.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !name.isEmpty, name.count <= 40 else { throw invalid("\(field).name", "1–40 characters") }
            guard (1...4).contains(style.category.rawValue) else {
                throw invalid("\(field).category", "cut, perm, colour or other")
            }
            guard (0...10_000_000).contains(style.priceKRW) else {
                throw invalid("\(field).price_krw", "0–10,000,000")
            }
            guard (5...720).contains(style.durationMinutes) else {
                throw invalid("\(field).duration_minutes", "5–720")
            }
            records.append(
                StyleRecord(
                    id: id, name: name, category: Int(style.category.rawValue), priceKRW: style.priceKRW,
                    durationMinutes: Int(style.durationMinutes)))
        }
        return records
    }
}
