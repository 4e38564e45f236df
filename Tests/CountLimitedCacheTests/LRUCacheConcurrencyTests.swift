import MetricsTestKit
import ProtoTestSupport
import XCTest

@testable import CountLimitedCache

/// Many tasks at once on one cache: nothing is lost or torn, and the books balance afterwards. Nothing here is
/// timed; the checks are counts and invariants.
final class LRUCacheConcurrencyTests: XCTestCase {
    private static let dimensions = [("cache", "shared")]

    /// Every value is derived from its key, so any read can tell whether it got a torn or foreign value.
    private static func value(for key: Int) -> Int { key &* 7919 &+ 13 }

    func testMixedOperationsFromManyTasksKeepTheInvariants() async throws {
        let metrics = TestMetrics()
        let cache = LRUCache<Int, Int>(name: "shared", capacity: 64, metricsFactory: metrics)
        let tasks = 8
        let operationsPerTask = 20_000

        let (gets, wrongValues) = await withTaskGroup(of: (gets: Int, wrongValues: Int).self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var random = SplitMix64(seed: UInt64(task) &+ 1)
                    var gets = 0
                    var wrongValues = 0
                    for _ in 0..<operationsPerTask {
                        let key = Int.random(in: 0..<256, using: &random)
                        switch Int.random(in: 0..<100, using: &random) {
                        case 0..<50:
                            gets += 1
                            if let value = cache.get(key), value != Self.value(for: key) {
                                wrongValues += 1
                            }
                        case 50..<90:
                            cache.put(Self.value(for: key), forKey: key)
                        case 90..<99:
                            if let value = cache.remove(key), value != Self.value(for: key) {
                                wrongValues += 1
                            }
                        default:
                            XCTAssertLessThanOrEqual(cache.count, cache.capacity)
                        }
                    }
                    return (gets, wrongValues)
                }
            }
            return await group.reduce(into: (0, 0)) { total, task in
                total.0 += task.gets
                total.1 += task.wrongValues
            }
        }

        XCTAssertEqual(wrongValues, 0)
        XCTAssertLessThanOrEqual(cache.count, cache.capacity)
        XCTAssertNil(cache.invariantViolation())
        let statistics = cache.statistics
        XCTAssertEqual(statistics.hits + statistics.misses, gets)
        XCTAssertGreaterThan(statistics.hits, 0)
        XCTAssertGreaterThan(statistics.evictions, 0)
        XCTAssertEqual(
            try metrics.expectCounter("yedi_cache_hits_total", Self.dimensions).totalValue, Int64(statistics.hits))
        XCTAssertEqual(
            try metrics.expectCounter("yedi_cache_misses_total", Self.dimensions).totalValue, Int64(statistics.misses))
        XCTAssertEqual(
            try metrics.expectCounter("yedi_cache_evictions_total", Self.dimensions).totalValue,
            Int64(statistics.evictions)
        )
        XCTAssertEqual(try metrics.expectGauge("yedi_cache_items", Self.dimensions).lastValue, Double(cache.count))
    }

    /// Distinct keys from every task: exactly `keys - capacity` evictions, whatever the interleaving.
    func testConcurrentInsertsEvictExactlyTheOverflow() async {
        let cache = LRUCache<Int, Int>(name: "shared", capacity: 100, metricsFactory: TestMetrics())
        let tasks = 8
        let keysPerTask = 5_000
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for key in (task * keysPerTask)..<((task + 1) * keysPerTask) {
                        cache.put(Self.value(for: key), forKey: key)
                    }
                }
            }
        }
        XCTAssertEqual(cache.count, 100)
        XCTAssertEqual(cache.statistics.evictions, tasks * keysPerTask - 100)
        XCTAssertNil(cache.invariantViolation())
    }

    /// With every key resident and nothing evicting, every concurrent read is a hit.
    func testConcurrentReadsOfResidentKeysAllHit() async {
        let cache = LRUCache<Int, Int>(name: "shared", capacity: 32, metricsFactory: TestMetrics())
        for key in 0..<32 {
            cache.put(Self.value(for: key), forKey: key)
        }
        let tasks = 8
        let readsPerTask = 10_000
        let wrongValues = await withTaskGroup(of: Int.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var wrong = 0
                    for read in 0..<readsPerTask {
                        let key = (read &* 31 &+ task) % 32
                        if cache.get(key) != Self.value(for: key) {
                            wrong += 1
                        }
                    }
                    return wrong
                }
            }
            return await group.reduce(0, +)
        }
        XCTAssertEqual(wrongValues, 0)
        XCTAssertEqual(cache.statistics, LRUCacheStatistics(hits: tasks * readsPerTask, misses: 0, evictions: 0))
        XCTAssertEqual(Set(cache.keysFromNewest), Set(0..<32))
        XCTAssertNil(cache.invariantViolation())
    }
}
