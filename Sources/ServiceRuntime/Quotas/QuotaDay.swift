/// The window of the daily quotas: a calendar day in Seoul (UTC+9, no daylight saving since 1988), so
/// "10 a day" resets at midnight where the users live, the same instant for every service.
public enum QuotaDay {
    static let offsetMilliseconds: Int64 = 9 * 3_600_000
    static let dayMilliseconds: Int64 = 86_400_000

    /// The start (Unix milliseconds) of the Seoul day holding `milliseconds`.
    public static func start(of milliseconds: Int64) -> Int64 {
        let local = milliseconds + offsetMilliseconds
        let floored = local - ((local % dayMilliseconds) + dayMilliseconds) % dayMilliseconds
        return floored - offsetMilliseconds
    }
}
