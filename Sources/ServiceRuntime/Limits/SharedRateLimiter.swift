import NIOConcurrencyHelpers

/// A `RateLimiter` behind a lock, for handlers that run on many tasks at once.
public final class SharedRateLimiter<Key: Hashable & Sendable>: Sendable {
    private let limiter: NIOLockedValueBox<RateLimiter<Key>>

    public init(limit: RateLimit, maximumKeys: Int = 10_000) {
        limiter = NIOLockedValueBox(RateLimiter(limit: limit, maximumKeys: maximumKeys))
    }

    public func take(_ key: Key, now: Double) -> RateLimitDecision {
        limiter.withLockedValue { $0.take(key, now: now) }
    }

    /// What `take` would answer, taking nothing (`RateLimiter.peek`).
    public func peek(_ key: Key, now: Double) -> RateLimitDecision {
        limiter.withLockedValue { $0.peek(key, now: now) }
    }

    public var count: Int { limiter.withLockedValue { $0.count } }
}

extension SharedRateLimiter {
    /// The limit each key is held to.
    public var limit: RateLimit { limiter.withLockedValue { $0.limit } }
}
