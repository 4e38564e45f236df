import Foundation

/// The line a run shows on stderr about once a second, so a long run is visibly alive:
/// `[3 s/10 s] 12345 calls, 4115 calls/s, 0 errors`.
public struct ProgressLine: Sendable, Equatable {
    /// Time since the start.
    public var elapsed: Duration
    /// Calls returned so far.
    public var calls: UInt64
    /// Calls returned so far that did not end OK.
    public var failures: UInt64
    /// Calls per second over the last interval.
    public var recentRate: Double
    public var limit: LoadPlan.Limit

    public init(elapsed: Duration, calls: UInt64, failures: UInt64, recentRate: Double, limit: LoadPlan.Limit) {
        self.elapsed = elapsed
        self.calls = calls
        self.failures = failures
        self.recentRate = recentRate
        self.limit = limit
    }

    public var text: String {
        let seconds = Int(elapsed.components.seconds)
        let progress =
            switch limit {
            case .duration(let duration): "[\(seconds) s/\(LoadReport.decimal(LoadReport.seconds(duration))) s]"
            case .total(let total): "[\(seconds) s, \(calls)/\(total)]"
            }
        let errors = failures == 1 ? "1 error" : "\(failures) errors"
        return "\(progress) \(calls) calls, \(String(format: "%.0f", recentRate)) calls/s, \(errors)"
    }
}
