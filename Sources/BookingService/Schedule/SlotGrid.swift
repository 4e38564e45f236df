/// The slots of one designer's schedule: which local times are slot starts, on which dates, and why a
/// time is not bookable. Pure (no clock, no store), so every rule is tested directly and by handlers.
struct SlotGrid: Sendable {
    let schedule: ScheduleRecord
    let clock: ShopClock
    /// Closed dates of the range being looked at.
    let closedDays: Set<LocalDay>

    /// A slot start in local minutes, and whether a break covers part of it.
    struct LocalSlot: Equatable {
        let minute: Int
        let inBreak: Bool
    }

    /// Every slot start of a working day: opening, opening + slot, … while the slot ends by closing.
    var localSlots: [LocalSlot] {
        let length = schedule.slotMinutes
        guard length > 0, schedule.closingMinute - schedule.openingMinute >= length else { return [] }
        return stride(from: schedule.openingMinute, through: schedule.closingMinute - length, by: length).map {
            LocalSlot(minute: $0, inBreak: overlapsBreak($0, length))
        }
    }

    func overlapsBreak(_ minute: Int, _ length: Int) -> Bool {
        schedule.breaks.contains { $0.start < minute + length && minute < $0.end }
    }

    func isClosed(_ day: LocalDay) -> Bool {
        closedDays.contains(day) || schedule.closedWeekdays.contains(day.isoWeekday)
    }

    /// The slots of `day` as instants (local times skipped by DST are left out).
    func slots(on day: LocalDay) -> [(start: Int64, minute: Int, inBreak: Bool)] {
        localSlots.compactMap { slot in
            clock.instant(day, minute: slot.minute).map { ($0, slot.minute, slot.inBreak) }
        }
    }

    var slotMilliseconds: Int64 { Int64(schedule.slotMinutes) * 60_000 }

    /// Why `start` cannot be booked (besides being taken), or nil when it is a bookable slot.
    func refusal(_ start: Int64, now: Int64) -> String? {
        if start <= now { return "start_at_ms: the slot is in the past" }
        let (day, minute) = clock.local(start)
        if closedDays.contains(day) { return "start_at_ms: the designer is closed on \(day)" }
        if schedule.closedWeekdays.contains(day.isoWeekday) {
            return "start_at_ms: the designer is closed every \(Self.weekdayNames[day.isoWeekday - 1])"
        }
        if minute < schedule.openingMinute || minute + schedule.slotMinutes > schedule.closingMinute {
            return "start_at_ms: outside the working hours"
        }
        if start % 60_000 != 0 || (minute - schedule.openingMinute) % schedule.slotMinutes != 0
            || clock.instant(day, minute: minute) != start
        {
            return "start_at_ms: not a slot start (slots are \(schedule.slotMinutes) minutes from the opening time)"
        }
        if overlapsBreak(minute, schedule.slotMinutes) { return "start_at_ms: the slot is in a break" }
        return nil
    }

    static let weekdayNames = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
}
