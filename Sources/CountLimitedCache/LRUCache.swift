import Metrics
import YediSync

/// A thread-safe least-recently-used cache holding at most `capacity` entries.
///
/// The limit is an **item count**, not a byte cost: the app team chose count because image sizes vary too widely
/// for a byte budget to be predictable per entry; size the capacity for the largest values you expect.
///
/// `get`, `put` and `remove` are O(1): a hash map finds a slot in an array-backed recency list (see
/// `LRUStorage`), and no operation allocates a node. One `Synchronization.Mutex` (in `TSanVisibleMutex`) guards the
/// state; it is held only for the map and list updates, while counters are bumped and displaced values released
/// after it is let go. Only the `yedi_cache_items` gauge is set under the lock, so that its last value is always
/// the true count.
///
/// Hits, misses and evictions are both in ``statistics`` and reported to swift-metrics as
/// `yedi_cache_hits_total`, `yedi_cache_misses_total` and `yedi_cache_evictions_total` with the dimension
/// `cache` = ``name``; the gauge `yedi_cache_items` has the current count.
public final class LRUCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline
    struct State {
        @usableFromInline var storage: LRUStorage<Key, Value>
        @usableFromInline var statistics = LRUCacheStatistics()

        init(storage: LRUStorage<Key, Value>) { self.storage = storage }
    }

    /// Tells this cache's series apart in metrics (the `cache` dimension).
    public let name: String
    /// The most entries the cache holds.
    public let capacity: Int
    @usableFromInline let state: TSanVisibleMutex<State>
    @usableFromInline let metrics: LRUCacheMetrics

    /// - Parameters:
    ///   - name: The `cache` dimension of the cache's metrics; give each cache its own.
    ///   - capacity: The most entries to keep, at least 1. A smaller value is a configuration bug and stops the
    ///     process (a precondition), the same as any other programmer error.
    ///   - metricsFactory: Where the counters and the gauge are made; the process-wide factory unless a test
    ///     passes its own.
    public init(name: String, capacity: Int, metricsFactory: any MetricsFactory = MetricsSystem.factory) {
        precondition(capacity >= 1, "LRUCache '\(name)': capacity must be at least 1, got \(capacity)")
        self.name = name
        self.capacity = capacity
        self.state = TSanVisibleMutex(State(storage: LRUStorage(capacity: capacity)))
        self.metrics = LRUCacheMetrics(cacheName: name, factory: metricsFactory)
        metrics.items.record(0)
    }

    /// The value for `key`, if cached; a hit makes the entry the most recently used.
    @inlinable
    public func get(_ key: Key) -> Value? {
        let value = state.withLock { state in
            let value = state.storage.value(forKey: key)
            if value != nil {
                state.statistics.hits += 1
            } else {
                state.statistics.misses += 1
            }
            return value
        }
        if value != nil {
            metrics.hits.increment()
        } else {
            metrics.misses.increment()
        }
        return value
    }

    /// Caches `value` as the most recently used entry, replacing any value of the same key; when the cache is
    /// full, the least recently used entry is evicted to make room.
    @inlinable
    public func put(_ value: Value, forKey key: Key) {
        let displaced = state.withLock { state in
            let displaced = state.storage.setValue(value, forKey: key)
            if case .evicted = displaced {
                state.statistics.evictions += 1
            }
            metrics.items.record(state.storage.count)
            return displaced
        }
        if case .evicted = displaced {
            metrics.evictions.increment()
        }
    }

    /// Removes `key`'s entry; returns its value, if there was one.
    @discardableResult
    @inlinable
    public func remove(_ key: Key) -> Value? {
        state.withLock { state in
            let value = state.storage.removeValue(forKey: key)
            metrics.items.record(state.storage.count)
            return value
        }
    }

    /// Empties the cache. The statistics and counters keep their values.
    public func removeAll() {
        // The old entries come out of the lock and are released here, not under it.
        _ = state.withLock { state in
            var emptied = LRUStorage<Key, Value>(capacity: capacity)
            swap(&emptied, &state.storage)
            metrics.items.record(0)
            return emptied
        }
    }

    /// The number of entries.
    public var count: Int {
        state.withLock { $0.storage.count }
    }

    /// Hits, misses and evictions so far, read in one go.
    public var statistics: LRUCacheStatistics {
        state.withLock { $0.statistics }
    }
}

// MARK: Checks for tests

extension LRUCache {
    /// The keys from the most to the least recently used.
    var keysFromNewest: [Key] {
        state.withLock { $0.storage.keysFromNewest }
    }

    /// A description of the first broken internal invariant, or `nil`.
    func invariantViolation() -> String? {
        state.withLock { $0.storage.invariantViolation() }
    }
}
