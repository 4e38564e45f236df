import Foundation

/// SLP's numbers and the rules computed from them (docs/slp.md): kept in one place so that the store's
/// transactions and the handlers' checks agree.
enum SlpRules {
    /// 만 17세 이상, and the widest partner age range.
    static let minimumAge = 17
    static let maximumAge = 100
    /// Nine yes/no reputation flags per rating.
    static let ratingFlags = 9
    static let maxRatingComment = 500
    static let maxStudies = 8
    static let maxStudyCharacters = 8
    static let maxFavouriteStudyCharacters = 8
    static let avatars = 0...4
    static let backgrounds = 0...8
    /// The search's page: the nearest 100.
    static let nearbyLimit = 100
    static let defaultRadiusMetres = 700
    static let defaultReportersBeforeRefusal = 3
    static let maxReasons = 6
    static let maxReportComment = 500
    /// Comments shown per person in a search.
    static let commentsShown = 20

    /// The penalty in force at `now` for a member who ended `dodgeCount` matches, the last at
    /// `lastDodge`: tier 1, 2, 3 (dodge counts 1, 2, ≥ 3) for as many minutes after the last end. Decided
    /// at read by the clock (no timer): nil once it is over.
    static func penalty(dodgeCount: Int, lastDodge: Int64?, now: Int64) -> (tier: Int, endsAt: Int64)? {
        guard dodgeCount > 0, let lastDodge else { return nil }
        let tier = min(dodgeCount, 3)
        let endsAt = lastDodge + Int64(tier) * 60_000
        return now < endsAt ? (tier, endsAt) : nil
    }

    /// Full years of age on the Seoul date of `now`.
    static func age(_ birth: DateParts, now: Int64) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Asia/Seoul")!
        let today = calendar.dateComponents(
            [.year, .month, .day], from: Date(timeIntervalSince1970: Double(now) / 1_000))
        let (year, month, day) = (today.year ?? 0, today.month ?? 0, today.day ?? 0)
        let hadBirthday = (month, day) >= (birth.month, birth.day)
        return year - birth.year - (hadBirthday ? 0 : 1)
    }

    /// Whether two members may see each other in a search: each one's age is inside the other's
    /// partner range (상대방 연령대 filters both ways: a range that excludes me hides them from me too).
    static func agesFit(
        _ mine: (age: Int, min: Int, max: Int), _ theirs: (age: Int, min: Int, max: Int)
    ) -> Bool {
        (mine.min...mine.max).contains(theirs.age) && (theirs.min...theirs.max).contains(mine.age)
    }

    /// Integers as stored in a text column: "0,1,2".
    static func encode(_ numbers: [Int]) -> String { numbers.map(String.init).joined(separator: ",") }

    static func decode(_ text: String) -> [Int] { text.split(separator: ",").compactMap { Int($0) } }
}
