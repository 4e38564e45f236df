/// When a designer is booked: the confirmed reservations' [start, end) in milliseconds, which never
/// overlap one another (the store lets one reservation hold a moment).
///
/// What handlers check slots against, so they never see how the store prevents double booking.
struct BookedTimes: Sendable, Equatable {
    /// Sorted by start; as the intervals do not overlap, also by end.
    let intervals: [Range<Int64>]

    init(_ intervals: [Range<Int64>]) {
        self.intervals = intervals.sorted { $0.lowerBound < $1.lowerBound }
    }

    /// From held cells (`BookingSchema.cellMilliseconds` long) in ascending order: each run of consecutive
    /// cells one interval.
    init(cells: [Int64]) {
        var intervals: [Range<Int64>] = []
        for cell in cells {
            let end = cell + BookingSchema.cellMilliseconds
            if let last = intervals.last, last.upperBound == cell {
                intervals[intervals.count - 1] = last.lowerBound..<end
            } else {
                intervals.append(cell..<end)
            }
        }
        self.init(intervals)
    }

    /// Whether any booking overlaps [start, end).
    func overlaps(_ start: Int64, _ end: Int64) -> Bool {
        // The first interval ending after `start` is the only one that can overlap without lying wholly
        // before it; a binary search, as a 31-day window checks a few hundred slots.
        var low = 0
        var high = intervals.count
        while low < high {
            let middle = (low + high) / 2
            if intervals[middle].upperBound <= start { low = middle + 1 } else { high = middle }
        }
        return low < intervals.count && intervals[low].lowerBound < end
    }
}
