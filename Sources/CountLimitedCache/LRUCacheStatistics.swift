/// A snapshot of an ``LRUCache``'s counters since it was created. They only grow: `removeAll()` and explicit
/// removals do not reset them, and neither replacing nor removing a value counts as an eviction.
public struct LRUCacheStatistics: Sendable, Hashable {
    /// Lookups that found a value.
    public var hits: Int
    /// Lookups that found nothing.
    public var misses: Int
    /// Entries dropped to make room for a new key.
    public var evictions: Int

    public init(hits: Int = 0, misses: Int = 0, evictions: Int = 0) {
        self.hits = hits
        self.misses = misses
        self.evictions = evictions
    }

    /// Every `get`, hit or miss.
    public var lookups: Int { hits + misses }
}
