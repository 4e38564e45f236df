/// Every per-user quota of the four services with its limit: the defaults below, changed with
/// `--quota NAME=LIMIT` (`YEDI_QUOTAS`). One catalogue, so a misspelt name is refused at start instead of
/// silently limiting nothing.
public struct QuotaLimits: Sendable, Equatable {
    private var limits: [String: Int64]

    /// Name, default limit, what is counted. Daily quotas count per Seoul day (`QuotaDay`).
    public static let catalogue: [(name: String, limit: Int64, counted: String)] = [
        ("reservations.open", 5, "upcoming reservations"),
        ("reservations.day", 10, "reservations made per day"),
        ("reviews.day", 20, "reviews per day"),
        ("rooms.day", 50, "chat rooms opened per day"),
        ("posts.day", 30, "posts per day"),
        ("uploads.day-bytes", 200 << 20, "bytes of images uploaded per day"),
        ("uploads.total-bytes", 2 << 30, "bytes of images stored"),
        ("cases.day", 20, "reports and inquiries per day"),
        // Kept, not refused: a new device replaces the oldest, a new notification drops the oldest.
        ("devices", 10, "push devices registered per app"),
        ("notifications.kept", 500, "notifications kept in the inbox"),
    ]

    public static let defaults = QuotaLimits(
        limits: Dictionary(uniqueKeysWithValues: catalogue.map { ($0.name, $0.limit) }))

    /// Sets one limit; false for a name not in the catalogue.
    public mutating func set(_ name: String, to limit: Int64) -> Bool {
        guard limits[name] != nil else { return false }
        limits[name] = limit
        return true
    }

    public subscript(name: String) -> Quota {
        guard let entry = Self.catalogue.first(where: { $0.name == name }) else {
            preconditionFailure("no quota named \(name) in QuotaLimits.catalogue")
        }
        return Quota(name: name, limit: limits[name] ?? entry.limit, counted: entry.counted)
    }

    public var reservationsOpen: Quota { self["reservations.open"] }
    public var reservationsPerDay: Quota { self["reservations.day"] }
    public var reviewsPerDay: Quota { self["reviews.day"] }
    public var roomsPerDay: Quota { self["rooms.day"] }
    public var postsPerDay: Quota { self["posts.day"] }
    public var uploadBytesPerDay: Quota { self["uploads.day-bytes"] }
    public var uploadBytesTotal: Quota { self["uploads.total-bytes"] }
    public var devices: Quota { self["devices"] }
    public var notificationsKept: Quota { self["notifications.kept"] }
}
