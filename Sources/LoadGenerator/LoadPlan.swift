/// What a run does: how many calls at a time, until when, and at which pace.
public struct LoadPlan: Sendable, Equatable {
    /// When a run ends.
    public enum Limit: Sendable, Equatable {
        /// No call starts (open model: is due) later than this after the start.
        case duration(Duration)
        /// This many calls in all.
        case total(UInt64)
    }

    /// Calls in flight at most: the number of workers.
    public var concurrency: Int
    public var limit: Limit
    /// Open model when set: calls are due at this pace whether or not earlier ones have returned.
    /// Closed model when nil: each worker calls again as soon as its previous call returns.
    public var pacer: RatePacer?

    public init(concurrency: Int, limit: Limit, pacer: RatePacer? = nil) {
        precondition(concurrency >= 1, "a run needs at least one worker")
        self.concurrency = concurrency
        self.limit = limit
        self.pacer = pacer
    }
}
