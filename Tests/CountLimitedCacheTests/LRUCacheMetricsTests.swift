import CoreMetrics
import MetricsTestKit
import XCTest

@testable import CountLimitedCache

/// The cache reports through swift-metrics: counters and a gauge per cache, under fixed labels, with the cache's
/// name as the `cache` dimension. A `TestMetrics` factory observes them without bootstrapping the global system.
final class LRUCacheMetricsTests: XCTestCase {
    func testCountersAndGaugeFollowTheOperations() throws {
        let metrics = TestMetrics()
        let cache = LRUCache<String, Int>(name: "images", capacity: 2, metricsFactory: metrics)
        let dimensions = [("cache", "images")]

        _ = cache.get("a")  // miss
        cache.put(1, forKey: "a")
        cache.put(2, forKey: "b")
        _ = cache.get("a")  // hit
        cache.put(3, forKey: "c")  // evicts b
        cache.put(4, forKey: "d")  // evicts a
        _ = cache.get("d")  // hit
        _ = cache.get("b")  // miss
        _ = cache.get("z")  // miss

        XCTAssertEqual(try metrics.expectCounter("yedi_cache_hits_total", dimensions).totalValue, 2)
        XCTAssertEqual(try metrics.expectCounter("yedi_cache_misses_total", dimensions).totalValue, 3)
        XCTAssertEqual(try metrics.expectCounter("yedi_cache_evictions_total", dimensions).totalValue, 2)
        XCTAssertEqual(try metrics.expectGauge("yedi_cache_items", dimensions).lastValue, 2)

        cache.remove("c")
        XCTAssertEqual(try metrics.expectGauge("yedi_cache_items", dimensions).lastValue, 1)
        cache.removeAll()
        XCTAssertEqual(try metrics.expectGauge("yedi_cache_items", dimensions).lastValue, 0)
        XCTAssertEqual(
            try metrics.expectCounter("yedi_cache_hits_total", dimensions).totalValue,
            2,
            "counters are monotonic; emptying the cache does not reset them"
        )
    }

    func testTheGaugeStartsAtZero() throws {
        let metrics = TestMetrics()
        _ = LRUCache<String, Int>(name: "empty", capacity: 4, metricsFactory: metrics)
        XCTAssertEqual(try metrics.expectGauge("yedi_cache_items", [("cache", "empty")]).values, [0])
    }

    func testEachCacheHasItsOwnSeries() throws {
        let metrics = TestMetrics()
        let images = LRUCache<String, Int>(name: "images", capacity: 4, metricsFactory: metrics)
        let profiles = LRUCache<String, Int>(name: "profiles", capacity: 4, metricsFactory: metrics)
        images.put(1, forKey: "a")
        _ = images.get("a")
        _ = profiles.get("a")

        XCTAssertEqual(try metrics.expectCounter("yedi_cache_hits_total", [("cache", "images")]).totalValue, 1)
        XCTAssertEqual(try metrics.expectCounter("yedi_cache_hits_total", [("cache", "profiles")]).totalValue, 0)
        XCTAssertEqual(try metrics.expectCounter("yedi_cache_misses_total", [("cache", "profiles")]).totalValue, 1)
        XCTAssertEqual(try metrics.expectGauge("yedi_cache_items", [("cache", "images")]).lastValue, 1)
        XCTAssertEqual(try metrics.expectGauge("yedi_cache_items", [("cache", "profiles")]).lastValue, 0)
    }

    /// Without an explicit factory the cache uses `MetricsSystem.factory`, which a task-local factory overrides.
    func testTheDefaultFactoryIsTheMetricsSystemOne() throws {
        let metrics = TestMetrics()
        let cache = withMetricsFactory(metrics) {
            LRUCache<String, Int>(name: "default", capacity: 1)
        }
        _ = cache.get("a")
        XCTAssertEqual(try metrics.expectCounter("yedi_cache_misses_total", [("cache", "default")]).totalValue, 1)
    }
}
