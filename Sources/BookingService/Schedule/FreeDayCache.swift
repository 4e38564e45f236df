import CountLimitedCache
import RPCCore
import Synchronization

/// The free slots of one designer's day, computed once and kept in a count-limited LRU cache, so the
/// anonymous `ListFreeSlots` does not rebuild every slot of every day on each call.
///
/// Correctness comes before hits: each designer has a version, and a day is cached under the version its
/// computation started with. A change to the designer's schedule, closed dates or reservations gives them
/// a new version *after* it commits (`FreeDayInvalidatingStore`), so a day computed from older data is
/// never found again, even if its computation finishes after the change. Versions come from one counter
/// and are never reused: a designer whose version was evicted gets a fresh one, which orphans their days.
final class FreeDayCache: Sendable {
    struct Key: Hashable, Sendable {
        let designerID: String
        let version: UInt64
        let dayNumber: Int
    }

    /// A day as the schedule, closed dates and booked cells make it. Slots are not yet filtered by the
    /// clock: "not after now" is applied when the day is read, so a cached day never goes stale with time.
    struct Day: Sendable, Equatable {
        let closed: Bool
        let starts: [Int64]
    }

    private let days: LRUCache<Key, Day>
    private let versions: LRUCache<String, UInt64>
    private let counter = Atomic<UInt64>(0)

    /// `days` by `(designer, version, day)`; `versions` by designer (`booking-free-days` and
    /// `booking-free-day-versions` on `/metrics`).
    init(days: LRUCache<Key, Day>, versions: LRUCache<String, UInt64>) {
        self.days = days
        self.versions = versions
    }

    /// The designer's current version; read it before reading anything the days are computed from.
    func version(of designerID: String) -> UInt64 {
        if let version = versions.get(designerID) { return version }
        let fresh = nextVersion()
        versions.put(fresh, forKey: designerID)
        return fresh
    }

    func day(_ designerID: String, version: UInt64, dayNumber: Int) -> Day? {
        days.get(Key(designerID: designerID, version: version, dayNumber: dayNumber))
    }

    func put(_ day: Day, _ designerID: String, version: UInt64, dayNumber: Int) {
        days.put(day, forKey: Key(designerID: designerID, version: version, dayNumber: dayNumber))
    }

    /// After a committed change of the designer's schedule, closed dates or reservations.
    func invalidate(_ designerID: String) {
        versions.put(nextVersion(), forKey: designerID)
    }

    /// After a change whose designers are not known (a purge frees other designers' slots).
    func invalidateAll() {
        versions.removeAll()
        days.removeAll()
    }

    var count: Int { days.count }

    private func nextVersion() -> UInt64 {
        counter.add(1, ordering: .relaxed).newValue
    }
}
