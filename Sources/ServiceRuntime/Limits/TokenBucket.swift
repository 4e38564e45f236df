/// One key's allowance under a `RateLimit`: the tokens left when last seen, and when that was.
///
/// Time is given, never read: the owner passes its injected clock's time, so tests decide it.
/// A clock that steps back (a wall clock corrected by NTP) refills nothing and takes nothing away.
public struct TokenBucket: Sendable, Hashable {
    public private(set) var tokens: Double
    public private(set) var updatedAt: Double

    /// A full bucket at `now` (seconds on any fixed scale).
    public init(_ limit: RateLimit, now: Double) {
        tokens = Double(limit.burst)
        updatedAt = now
    }

    /// Takes one token at `now` if there is one; otherwise says how long until there will be.
    public mutating func take(_ limit: RateLimit, now: Double) -> RateLimitDecision {
        if now > updatedAt {
            tokens = min(Double(limit.burst), tokens + (now - updatedAt) / limit.secondsPerToken)
            updatedAt = now
        }
        if tokens >= 1 {
            tokens -= 1
            return .allowed
        }
        return .limited(retryAfterSeconds: (1 - tokens) * limit.secondsPerToken)
    }

    /// Whether the bucket is full again at `now`: such a key can be forgotten without changing an answer.
    public func isFull(_ limit: RateLimit, now: Double) -> Bool {
        tokens + max(0, now - updatedAt) / limit.secondsPerToken >= Double(limit.burst)
    }
}

/// What a rate limiter says about one call.
public enum RateLimitDecision: Sendable, Hashable {
    case allowed
    /// Refused; a token comes back after this many seconds.
    case limited(retryAfterSeconds: Double)

    /// Whole seconds for a `retry-after` value: rounded up, at least 1.
    public var retryAfter: Int? {
        guard case .limited(let seconds) = self else { return nil }
        return max(1, Int(seconds.rounded(.up)))
    }
}
