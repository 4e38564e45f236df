import RPCCore
import YediProto

extension BookingHandlers {
    /// Free slot starts per local date of [from, to] (at most `BookingRules.maximumRangeDays`). Days come
    /// from `freeDays` when cached; the others are computed together from one read of closed dates and
    /// booked cells, and cached. "After now" is applied to cached and fresh days alike.
    func listFreeSlots(_ request: YediBooking.ListFreeSlotsRequest, context: ServerContext) async throws
        -> YediBooking.ListFreeSlotsResponse
    {
        let designerID = try BookingRules.id(request.designerID, field: "designer_id")
        let from = try BookingRules.day(request.from, field: "from")
        let to = try BookingRules.day(request.to, field: "to")
        guard from <= to else { throw BookingRules.invalid("to", "before from") }
        guard to.dayNumber - from.dayNumber < BookingRules.maximumRangeDays else {
            throw BookingRules.invalid(
                "to", "at most \(BookingRules.maximumRangeDays) days from `from` (inclusive) per call")
        }
        // The version first: whatever is read after it is at least as new, so a day cached under it is
        // never older than a change that had already invalidated it.
        let version = freeDays.version(of: designerID)
        let schedule = try await schedule(of: designerID)
        var found: [Int: FreeDayCache.Day] = [:]
        var missing: [LocalDay] = []
        for dayNumber in from.dayNumber...to.dayNumber {
            if let day = freeDays.day(designerID, version: version, dayNumber: dayNumber) {
                found[dayNumber] = day
            } else {
                missing.append(LocalDay(dayNumber: dayNumber))
            }
        }
        if let first = missing.first, let last = missing.last {
            let computed = try await computeFreeDays(schedule, from: first, through: last)
            for day in missing {
                let free = computed[day.dayNumber] ?? FreeDayCache.Day(closed: true, starts: [])
                found[day.dayNumber] = free
                freeDays.put(free, designerID, version: version, dayNumber: day.dayNumber)
            }
        }
        let now = clock.nowMilliseconds
        let days = (from.dayNumber...to.dayNumber).map { dayNumber in
            let free = found[dayNumber] ?? FreeDayCache.Day(closed: true, starts: [])
            let date = Self.date(LocalDay(dayNumber: dayNumber))
            return free.closed
                ? YediBooking.DaySlots(date: date, closed: true)
                : YediBooking.DaySlots(date: date, closed: false, freeStartAtMs: free.starts.filter { $0 > now })
        }
        return YediBooking.ListFreeSlotsResponse(
            timeZone: schedule.timeZone, slotMinutes: Int32(schedule.slotMinutes), days: days)
    }

    /// Every day of [from, through] from the store: closed, or its slots outside breaks and bookings.
    private func computeFreeDays(_ schedule: ScheduleRecord, from: LocalDay, through: LocalDay) async throws
        -> [Int: FreeDayCache.Day]
    {
        let grid = try await grid(schedule, from: from, through: through)
        let rangeStart = grid.clock.startOfDay(from)
        let rangeEnd = grid.clock.startOfDay(through.adding(days: 1))
        let booked = try await store.bookedTimes(
            designerID: schedule.designerID, from: rangeStart, until: rangeEnd + grid.slotMilliseconds)
        var days: [Int: FreeDayCache.Day] = [:]
        for dayNumber in from.dayNumber...through.dayNumber {
            let day = LocalDay(dayNumber: dayNumber)
            guard !grid.isClosed(day) else {
                days[dayNumber] = FreeDayCache.Day(closed: true, starts: [])
                continue
            }
            let free = grid.slots(on: day).filter { slot in
                !slot.inBreak && !booked.overlaps(slot.start, slot.start + grid.slotMilliseconds)
            }
            days[dayNumber] = FreeDayCache.Day(closed: false, starts: free.map(\.start))
        }
        return days
    }
}
