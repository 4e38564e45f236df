import MetricsTestKit
import ProtoTestSupport
import XCTest

@testable import CountLimitedCache

/// Random operations, replayed from a fixed seed, give the same answers from the cache as from an obviously
/// correct reference: a list searched linearly, ordered from the most to the least recently used.
final class LRUCacheModelTests: XCTestCase {
    private struct ReferenceLRU {
        let capacity: Int
        private(set) var entries: [(key: Int, value: Int)] = []
        private(set) var statistics = LRUCacheStatistics()

        init(capacity: Int) {
            self.capacity = capacity
        }

        var keysFromNewest: [Int] { entries.map(\.key) }

        mutating func get(_ key: Int) -> Int? {
            guard let index = entries.firstIndex(where: { $0.key == key }) else {
                statistics.misses += 1
                return nil
            }
            statistics.hits += 1
            let entry = entries.remove(at: index)
            entries.insert(entry, at: 0)
            return entry.value
        }

        mutating func put(_ value: Int, forKey key: Int) {
            if let index = entries.firstIndex(where: { $0.key == key }) {
                entries.remove(at: index)
            } else if entries.count == capacity {
                entries.removeLast()
                statistics.evictions += 1
            }
            entries.insert((key, value), at: 0)
        }

        mutating func remove(_ key: Int) -> Int? {
            guard let index = entries.firstIndex(where: { $0.key == key }) else { return nil }
            return entries.remove(at: index).value
        }

        mutating func removeAll() {
            entries.removeAll()
        }
    }

    /// Runs `operations` random operations on a cache and the reference, comparing every answer, and the full
    /// recency order and internal invariants every `orderCheckInterval` operations.
    private func compareWithReference(
        capacity: Int,
        operations: Int,
        seed: UInt64,
        orderCheckInterval: Int = 101,
        file: StaticString = #filePath,
        line: UInt = #line
    ) throws {
        var random = SplitMix64(seed: seed)
        let metrics = TestMetrics()
        let cache = LRUCache<Int, Int>(name: "model", capacity: capacity, metricsFactory: metrics)
        var reference = ReferenceLRU(capacity: capacity)
        let keySpace = capacity * 3 + 1

        for step in 0..<operations {
            let key = Int.random(in: 0..<keySpace, using: &random)
            let roll = Int.random(in: 0..<1000, using: &random)
            let context = "step \(step) (seed \(seed), capacity \(capacity))"
            switch roll {
            case 0..<450:
                let (actual, expected) = (cache.get(key), reference.get(key))
                guard actual == expected else {
                    return XCTFail(
                        "get(\(key)) = \(String(describing: actual)), expected \(String(describing: expected)) at \(context)",
                        file: file, line: line)
                }
            case 450..<850:
                let value = Int.random(in: 0..<1_000_000, using: &random)
                cache.put(value, forKey: key)
                reference.put(value, forKey: key)
            case 850..<999:
                let (actual, expected) = (cache.remove(key), reference.remove(key))
                guard actual == expected else {
                    return XCTFail(
                        "remove(\(key)) = \(String(describing: actual)), expected \(String(describing: expected)) at \(context)",
                        file: file, line: line)
                }
            default:
                cache.removeAll()
                reference.removeAll()
            }
            guard cache.count == reference.entries.count else {
                return XCTFail(
                    "count \(cache.count), expected \(reference.entries.count) at \(context)", file: file, line: line)
            }
            if step % orderCheckInterval == 0 {
                guard cache.keysFromNewest == reference.keysFromNewest else {
                    return XCTFail(
                        "order \(cache.keysFromNewest), expected \(reference.keysFromNewest) at \(context)", file: file,
                        line: line)
                }
                if let violation = cache.invariantViolation() {
                    return XCTFail("\(violation) at \(context)", file: file, line: line)
                }
            }
        }

        XCTAssertEqual(cache.keysFromNewest, reference.keysFromNewest, file: file, line: line)
        XCTAssertNil(cache.invariantViolation(), file: file, line: line)
        XCTAssertEqual(cache.statistics, reference.statistics, file: file, line: line)
        let dimensions = [("cache", "model")]
        let hits = try metrics.expectCounter("yedi_cache_hits_total", dimensions).totalValue
        let misses = try metrics.expectCounter("yedi_cache_misses_total", dimensions).totalValue
        let evictions = try metrics.expectCounter("yedi_cache_evictions_total", dimensions).totalValue
        XCTAssertEqual(
            LRUCacheStatistics(hits: Int(hits), misses: Int(misses), evictions: Int(evictions)),
            reference.statistics,
            file: file,
            line: line
        )
        XCTAssertEqual(
            try metrics.expectGauge("yedi_cache_items", dimensions).lastValue,
            Double(reference.entries.count),
            file: file,
            line: line
        )
    }

    func testHundredThousandRandomOperationsMatchTheReference() throws {
        try compareWithReference(capacity: 64, operations: 100_000, seed: 0x5EED_CAFE)
    }

    func testTinyCapacitiesMatchTheReference() throws {
        for capacity in 1...4 {
            try compareWithReference(
                capacity: capacity, operations: 10_000, seed: UInt64(capacity), orderCheckInterval: 1)
        }
    }
}
