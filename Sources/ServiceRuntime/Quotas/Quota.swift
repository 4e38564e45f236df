import RPCCore

/// One per-user limit, named the same way in the options, the docs and the answer a caller gets.
///
/// Stores check a quota inside the write transaction that adds the row (count, then insert), so concurrent
/// calls of one user cannot all see room for one more.
public struct Quota: Sendable, Hashable, CustomStringConvertible {
    /// `reservations.open`: the name in `--quota NAME=LIMIT` and in the refusal.
    public let name: String
    public let limit: Int64
    /// What is counted, in the plural: "upcoming reservations".
    public let counted: String

    public init(name: String, limit: Int64, counted: String) {
        self.name = name
        self.limit = limit
        self.counted = counted
    }

    /// Throws `QuotaExceeded` when `used` plus `adding` would pass the limit.
    public func check(used: Int64, adding: Int64 = 1) throws(QuotaExceeded) {
        guard used + adding <= limit else { throw QuotaExceeded(quota: self) }
    }

    /// "quota reservations.open: at most 5 upcoming reservations"
    public var description: String { "quota \(name): at most \(limit) \(counted)" }
}

/// A user reached a quota: the caller is told `RESOURCE_EXHAUSTED` with the quota's name and limit.
public struct QuotaExceeded: Error, Sendable, Equatable {
    public let quota: Quota

    public init(quota: Quota) {
        self.quota = quota
    }

    public var status: RPCError { RPCError(code: .resourceExhausted, message: quota.description) }
}
