/// Token buckets per key (a client address, a connection) under one `RateLimit`, in bounded memory.
///
/// Anonymous calls that cost real work (a password hash is ~100 ms of CPU) must not be free to repeat:
/// this is what tells one client's flood from everyone else's calls. A value type with the time passed
/// in, so it is tested without waiting and shared however its owner likes (`SharedRateLimiter`).
///
/// Memory is bounded by `maximumKeys`: when a new key arrives and the table is full, the least recently
/// used key is forgotten. A forgotten key starts again with a full bucket, so an attacker cycling through
/// more keys than the table holds gains at most one burst per key; the per-address limit is what stops
/// that, and the bound is what keeps the limiter itself from becoming the memory problem.
public struct RateLimiter<Key: Hashable & Sendable>: Sendable {
    public let limit: RateLimit
    public let maximumKeys: Int
    private var buckets: [Key: Entry] = [:]
    /// Keys oldest first (by last use); stale positions are skipped (`Entry.useCount`).
    private var order: [(key: Key, useCount: UInt64)] = []
    private var orderHead = 0
    private var uses: UInt64 = 0

    private struct Entry: Sendable {
        var bucket: TokenBucket
        var useCount: UInt64
    }

    public init(limit: RateLimit, maximumKeys: Int = 10_000) {
        precondition(maximumKeys > 0)
        self.limit = limit
        self.maximumKeys = maximumKeys
    }

    /// How many keys the table holds now.
    public var count: Int { buckets.count }

    /// Takes one token from `key`'s bucket at `now` (seconds, the owner's clock).
    public mutating func take(_ key: Key, now: Double) -> RateLimitDecision {
        uses += 1
        var entry: Entry
        if let found = buckets[key] {
            entry = found
        } else {
            if buckets.count >= maximumKeys { evictOldest() }
            entry = Entry(bucket: TokenBucket(limit, now: now), useCount: 0)
        }
        let decision = entry.bucket.take(limit, now: now)
        entry.useCount = uses
        buckets[key] = entry
        order.append((key, uses))
        compactIfNeeded()
        return decision
    }

    /// What `take` would answer for `key` at `now`, taking nothing: for limits charged only on failure
    /// (a refused guess), checked before the attempt.
    public func peek(_ key: Key, now: Double) -> RateLimitDecision {
        var bucket = buckets[key]?.bucket ?? TokenBucket(limit, now: now)
        return bucket.take(limit, now: now)
    }

    /// Forgets the least recently used key.
    private mutating func evictOldest() {
        while orderHead < order.count {
            let (key, useCount) = order[orderHead]
            orderHead += 1
            if buckets[key]?.useCount == useCount {
                buckets[key] = nil
                return
            }
        }
    }

    /// Keeps `order` proportional to the table: drops the consumed head and stale positions.
    private mutating func compactIfNeeded() {
        guard order.count > 2 * maximumKeys + 64 else { return }
        order = order[orderHead...].filter { buckets[$0.key]?.useCount == $0.useCount }
        orderHead = 0
    }
}
