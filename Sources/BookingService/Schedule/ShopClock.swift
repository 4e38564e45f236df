import Foundation

/// Local dates and times of one IANA zone ↔ instants (Unix milliseconds).
///
/// Built on the zone's offsets only (`secondsFromGMT(for:)`), so DST is handled explicitly: a local time
/// that a spring-forward skips has no instant (`instant` answers nil and no slot is offered), and one a
/// fall-back repeats maps to its first occurrence.
struct ShopClock: Sendable {
    let zone: TimeZone

    static let defaultZone = "Asia/Seoul"

    /// nil for a name the system's tz database does not know.
    init?(identifier: String) {
        guard !identifier.isEmpty, identifier.utf8.count <= 64, let zone = TimeZone(identifier: identifier) else {
            return nil
        }
        self.zone = zone
    }

    private func offsetSeconds(atSeconds seconds: Int64) -> Int64 {
        Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(seconds))))
    }

    /// The instant of local time `minute` (after midnight) on `day`; nil when the zone skips it.
    func instant(_ day: LocalDay, minute: Int) -> Int64? {
        let local = Int64(day.dayNumber) * 86_400 + Int64(minute) * 60
        // The offsets in force a day before and a day after; zones change at most once in between.
        let candidates = Set([offsetSeconds(atSeconds: local - 86_400), offsetSeconds(atSeconds: local + 86_400)])
        let valid = candidates.map { local - $0 }.filter { offsetSeconds(atSeconds: $0) == local - $0 }
        return valid.min().map { $0 * 1_000 }
    }

    /// The first instant of `day` (its midnight, or the end of a DST gap that swallows midnight).
    func startOfDay(_ day: LocalDay) -> Int64 {
        if let midnight = instant(day, minute: 0) { return midnight }
        let local = Int64(day.dayNumber) * 86_400
        return (local - offsetSeconds(atSeconds: local - 86_400)) * 1_000
    }

    /// The local date and minute after midnight of an instant.
    func local(_ milliseconds: Int64) -> (day: LocalDay, minute: Int) {
        let seconds = Self.floorDivide(milliseconds, 1_000)
        let local = seconds + offsetSeconds(atSeconds: seconds)
        let dayNumber = Self.floorDivide(local, 86_400)
        return (LocalDay(dayNumber: Int(dayNumber)), Int((local - dayNumber * 86_400) / 60))
    }

    func today(_ nowMilliseconds: Int64) -> LocalDay { local(nowMilliseconds).day }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return value % divisor < 0 ? quotient - 1 : quotient
    }
}
