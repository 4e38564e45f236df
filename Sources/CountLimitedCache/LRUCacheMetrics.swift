import Metrics

/// An ``LRUCache``'s swift-metrics handles, made once at init so that counting costs no registry lookup.
///
/// Every cache reports under the same labels and tells itself apart by the `cache` dimension, so one dashboard
/// query covers all caches; two caches with the same name share their series.
@usableFromInline
struct LRUCacheMetrics: Sendable {
    static let hitsLabel = "yedi_cache_hits_total"
    static let missesLabel = "yedi_cache_misses_total"
    static let evictionsLabel = "yedi_cache_evictions_total"
    static let itemsLabel = "yedi_cache_items"
    static let cacheDimension = "cache"

    @usableFromInline let hits: Counter
    @usableFromInline let misses: Counter
    @usableFromInline let evictions: Counter
    /// The current number of entries.
    @usableFromInline let items: Gauge

    init(cacheName: String, factory: any MetricsFactory) {
        let dimensions = [(Self.cacheDimension, cacheName)]
        hits = Counter(label: Self.hitsLabel, dimensions: dimensions, factory: factory)
        misses = Counter(label: Self.missesLabel, dimensions: dimensions, factory: factory)
        evictions = Counter(label: Self.evictionsLabel, dimensions: dimensions, factory: factory)
        items = Gauge(label: Self.itemsLabel, dimensions: dimensions, factory: factory)
    }
}
