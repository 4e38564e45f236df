/// How long each service keeps what it may delete, in hours: the defaults below, changed with
/// `--retention NAME=HOURS` (`YEDI_RETENTION`). One catalogue, so a misspelt name is refused at start.
public struct RetentionPeriods: Sendable, Equatable {
    private var hours: [String: Double]

    /// Name, default hours, what it keeps.
    public static let catalogue: [(name: String, hours: Double, kept: String)] = [
        // Long enough to use an upload in a post, review or profile, short enough that abandoned ones go.
        ("images.unreferenced", 24, "an uploaded image no post, review, chat message or profile uses"),
        // What a stream resuming after a week offline may still need; older positions must reload.
        ("chat.events", 7 * 24, "live-stream events for resuming subscribers"),
        // An expired or revoked refresh token can do nothing; a day keeps it for looking into a complaint.
        ("sessions.dead", 24, "a refresh-token row after it expired or was revoked"),
        // A notification screen shows recent news; three months covers "what was that about?".
        ("notifications", 90 * 24, "a notification in a user's inbox, read or not"),
    ]

    public static let defaults = RetentionPeriods(
        hours: Dictionary(uniqueKeysWithValues: catalogue.map { ($0.name, $0.hours) }))

    /// Sets one period; false for a name not in the catalogue.
    public mutating func set(_ name: String, hours value: Double) -> Bool {
        guard hours[name] != nil else { return false }
        hours[name] = value
        return true
    }

    /// The period in milliseconds.
    public func milliseconds(_ name: String) -> Int64 {
        guard let value = hours[name] else { preconditionFailure("no retention named \(name)") }
        return Int64(value * 3_600_000)
    }

    public var unreferencedImages: Int64 { milliseconds("images.unreferenced") }
    public var chatEvents: Int64 { milliseconds("chat.events") }
    public var deadSessions: Int64 { milliseconds("sessions.dead") }
    public var notifications: Int64 { milliseconds("notifications") }
}
