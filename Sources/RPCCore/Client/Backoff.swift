/// Jittered exponential backoff, as gRPC's connection backoff: each delay is the previous one times
/// `multiplier`, capped at `maximum`, then spread by ±`jitter` so that clients do not reconnect in step.
public struct Backoff: Sendable, Hashable {
    public var initial: Duration
    public var multiplier: Double
    public var maximum: Duration
    /// 0.2 spreads each delay over ±20%.
    public var jitter: Double

    public init(initial: Duration, multiplier: Double = 1.6, maximum: Duration, jitter: Double = 0.2) {
        self.initial = initial
        self.multiplier = multiplier
        self.maximum = maximum
        self.jitter = jitter
    }

    /// The delay before attempt `attempt` (1 = the first retry), with `random` uniform in 0..<1.
    /// Pure, so tests can pin the randomness.
    public func delay(attempt: Int, random: Double) -> Duration {
        let base = min(initial.seconds * pow(multiplier, Double(max(0, attempt - 1))), maximum.seconds)
        let spread = base * jitter * (random * 2 - 1)
        return .nanoseconds(Int64(max(0, base + spread) * 1e9))
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

private func pow(_ base: Double, _ exponent: Double) -> Double {
    var result = 1.0
    var remaining = Int(exponent)
    var factor = base
    while remaining > 0 {
        if remaining & 1 == 1 { result *= factor }
        factor *= factor
        remaining >>= 1
    }
    return result
}

extension Duration {
    /// The duration in whole nanoseconds, saturating at the bounds of Int64.
    var nanoseconds: Int64 {
        let (seconds, overflow) = components.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return components.seconds < 0 ? .min : .max }
        let (total, overflow2) = seconds.addingReportingOverflow(components.attoseconds / 1_000_000_000)
        return overflow2 ? (seconds < 0 ? .min : .max) : total
    }
}
