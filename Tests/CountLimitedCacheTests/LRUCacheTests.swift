import MetricsTestKit
import XCTest

@testable import CountLimitedCache

/// The cache's behaviour one operation at a time: recency order, eviction, replacement, removal, statistics.
final class LRUCacheTests: XCTestCase {
    private func makeCache(capacity: Int) -> LRUCache<String, Int> {
        LRUCache(name: "test", capacity: capacity, metricsFactory: TestMetrics())
    }

    private func assertConsistent(
        _ cache: LRUCache<String, Int>,
        file: StaticString = #filePath,
        line: UInt = #line
    ) {
        XCTAssertNil(cache.invariantViolation(), file: file, line: line)
    }

    func testEmptyCacheMisses() {
        let cache = makeCache(capacity: 3)
        XCTAssertNil(cache.get("a"))
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(cache.capacity, 3)
        XCTAssertEqual(cache.keysFromNewest, [])
        assertConsistent(cache)
    }

    func testPutThenGet() {
        let cache = makeCache(capacity: 3)
        cache.put(1, forKey: "a")
        cache.put(2, forKey: "b")
        XCTAssertEqual(cache.get("a"), 1)
        XCTAssertEqual(cache.get("b"), 2)
        XCTAssertEqual(cache.count, 2)
        assertConsistent(cache)
    }

    func testEvictsLeastRecentlyUsedFirst() {
        let cache = makeCache(capacity: 3)
        for (value, key) in ["a", "b", "c", "d", "e"].enumerated() {
            cache.put(value, forKey: key)
            assertConsistent(cache)
        }
        XCTAssertEqual(cache.keysFromNewest, ["e", "d", "c"])
        XCTAssertNil(cache.get("a"))
        XCTAssertNil(cache.get("b"))
        XCTAssertEqual(cache.get("c"), 2)
        XCTAssertEqual(cache.count, 3)
        XCTAssertEqual(cache.statistics.evictions, 2)
    }

    func testGetRefreshesRecency() {
        let cache = makeCache(capacity: 3)
        cache.put(1, forKey: "a")
        cache.put(2, forKey: "b")
        cache.put(3, forKey: "c")
        XCTAssertEqual(cache.get("a"), 1)
        XCTAssertEqual(cache.keysFromNewest, ["a", "c", "b"])

        cache.put(4, forKey: "d")
        XCTAssertNil(cache.get("b"), "b was the least recently used once a was read")
        XCTAssertEqual(cache.keysFromNewest, ["d", "a", "c"])
        assertConsistent(cache)
    }

    func testMissDoesNotChangeOrder() {
        let cache = makeCache(capacity: 2)
        cache.put(1, forKey: "a")
        cache.put(2, forKey: "b")
        XCTAssertNil(cache.get("z"))
        XCTAssertEqual(cache.keysFromNewest, ["b", "a"])
    }

    func testReplacingAValueRefreshesItWithoutEvicting() {
        let cache = makeCache(capacity: 3)
        cache.put(1, forKey: "a")
        cache.put(2, forKey: "b")
        cache.put(3, forKey: "c")

        cache.put(10, forKey: "a")
        XCTAssertEqual(cache.count, 3)
        XCTAssertEqual(cache.statistics.evictions, 0, "a replacement is not an eviction")
        XCTAssertEqual(cache.keysFromNewest, ["a", "c", "b"])

        cache.put(4, forKey: "d")
        XCTAssertEqual(cache.keysFromNewest, ["d", "a", "c"])
        XCTAssertEqual(cache.get("a"), 10)
        XCTAssertNil(cache.get("b"))
        assertConsistent(cache)
    }

    func testRemove() {
        let cache = makeCache(capacity: 3)
        cache.put(1, forKey: "a")
        cache.put(2, forKey: "b")
        cache.put(3, forKey: "c")

        XCTAssertEqual(cache.remove("b"), 2)
        XCTAssertNil(cache.remove("b"))
        XCTAssertNil(cache.remove("never"))
        XCTAssertNil(cache.get("b"))
        XCTAssertEqual(cache.count, 2)
        XCTAssertEqual(cache.keysFromNewest, ["c", "a"])
        assertConsistent(cache)

        // The freed slot takes the next key without evicting anyone.
        cache.put(4, forKey: "d")
        XCTAssertEqual(cache.keysFromNewest, ["d", "c", "a"])
        XCTAssertEqual(cache.statistics.evictions, 0)
        assertConsistent(cache)
    }

    func testRemovingTheNewestAndTheOldest() {
        let cache = makeCache(capacity: 4)
        for (value, key) in ["a", "b", "c", "d"].enumerated() {
            cache.put(value, forKey: key)
        }
        XCTAssertEqual(cache.remove("d"), 3)
        XCTAssertEqual(cache.remove("a"), 0)
        XCTAssertEqual(cache.keysFromNewest, ["c", "b"])
        assertConsistent(cache)
        XCTAssertEqual(cache.remove("b"), 1)
        XCTAssertEqual(cache.remove("c"), 2)
        XCTAssertEqual(cache.keysFromNewest, [])
        assertConsistent(cache)
        cache.put(9, forKey: "z")
        XCTAssertEqual(cache.keysFromNewest, ["z"])
        assertConsistent(cache)
    }

    func testCapacityOne() {
        let cache = makeCache(capacity: 1)
        cache.put(1, forKey: "a")
        XCTAssertEqual(cache.get("a"), 1)
        cache.put(2, forKey: "b")
        XCTAssertNil(cache.get("a"))
        XCTAssertEqual(cache.get("b"), 2)
        cache.put(3, forKey: "b")
        XCTAssertEqual(cache.get("b"), 3)
        XCTAssertEqual(cache.count, 1)
        XCTAssertEqual(cache.statistics.evictions, 1)
        XCTAssertEqual(cache.remove("b"), 3)
        XCTAssertEqual(cache.count, 0)
        cache.put(4, forKey: "c")
        XCTAssertEqual(cache.keysFromNewest, ["c"])
        assertConsistent(cache)
    }

    func testRemoveAllEmptiesButKeepsStatistics() {
        let cache = makeCache(capacity: 2)
        cache.put(1, forKey: "a")
        cache.put(2, forKey: "b")
        cache.put(3, forKey: "c")
        _ = cache.get("c")
        _ = cache.get("a")

        cache.removeAll()
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(cache.keysFromNewest, [])
        XCTAssertNil(cache.get("b"))
        XCTAssertNil(cache.get("c"))
        XCTAssertEqual(cache.statistics, LRUCacheStatistics(hits: 1, misses: 3, evictions: 1))
        assertConsistent(cache)

        cache.put(4, forKey: "d")
        XCTAssertEqual(cache.get("d"), 4)
        XCTAssertEqual(cache.count, 1)
        assertConsistent(cache)
    }

    func testStatisticsCountHitsMissesAndEvictions() {
        let cache = makeCache(capacity: 2)
        XCTAssertEqual(cache.statistics, LRUCacheStatistics())
        _ = cache.get("a")  // miss
        cache.put(1, forKey: "a")
        cache.put(2, forKey: "b")
        _ = cache.get("a")  // hit
        _ = cache.get("b")  // hit
        cache.put(3, forKey: "c")  // evicts a
        _ = cache.get("a")  // miss
        cache.put(4, forKey: "c")  // replaces
        cache.remove("b")

        let statistics = cache.statistics
        XCTAssertEqual(statistics, LRUCacheStatistics(hits: 2, misses: 2, evictions: 1))
        XCTAssertEqual(statistics.lookups, 4)
    }

    func testDisplacedValuesAreReleased() {
        final class Image: Sendable {}
        let cache = LRUCache<Int, Image>(name: "images", capacity: 2, metricsFactory: TestMetrics())
        weak var evicted: Image?
        weak var replaced: Image?
        weak var removed: Image?
        weak var cleared: Image?
        do {
            let first = Image()
            evicted = first
            cache.put(first, forKey: 1)
            let second = Image()
            replaced = second
            cache.put(second, forKey: 2)
        }
        cache.put(Image(), forKey: 2)  // replaces the second image
        cache.put(Image(), forKey: 3)  // evicts key 1
        XCTAssertNil(evicted)
        XCTAssertNil(replaced)

        do {
            let image = Image()
            removed = image
            cache.put(image, forKey: 4)
        }
        cache.remove(4)
        XCTAssertNil(removed)

        do {
            let image = Image()
            cleared = image
            cache.put(image, forKey: 5)
        }
        cache.removeAll()
        XCTAssertNil(cleared)
    }
}
