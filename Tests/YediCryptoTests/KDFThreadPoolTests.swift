import Foundation
import XCTest

@testable import YediCrypto

/// The KDF queue: bounded in all and per key, fair between keys, and work whose caller left is dropped.
/// Each test blocks a one-thread pool with a job it releases, so what waits is known exactly.
final class KDFThreadPoolTests: XCTestCase {
    /// A job that holds the pool's only thread until `release()`.
    private final class Gate: @unchecked Sendable {
        let started = DispatchSemaphore(value: 0)
        let open = DispatchSemaphore(value: 0)
        func release() { open.signal() }
    }

    private func blocked(_ pool: KDFThreadPool, key: String = "block") async -> (Gate, Task<Void, Error>) {
        let gate = Gate()
        let task = Task {
            try await pool.run(key: key) {
                gate.started.signal()
                gate.open.wait()
            }
        }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                gate.started.wait()
                continuation.resume()
            }
        }
        return (gate, task)
    }

    private func waitUntil(_ pool: KDFThreadPool, waiting: Int) async throws {
        for _ in 0..<500 where pool.waiting != waiting { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertEqual(pool.waiting, waiting)
    }

    func testAFullQueueRefusesAtOnceInAllAndPerKey() async throws {
        let pool = KDFThreadPool(threadCount: 1, queueLimit: 3, perKeyLimit: 2)
        let (gate, blocker) = await blocked(pool)
        let queued = (0..<2).map { _ in Task { try await pool.run(key: "a") { 1 } } }
        try await waitUntil(pool, waiting: 2)
        do {
            _ = try await pool.run(key: "a") { 1 }
            XCTFail("a third job for one key was queued")
        } catch {
            XCTAssertEqual(error as? KDFQueueError, .full)
        }
        let other = Task { try await pool.run(key: "b") { 1 } }
        try await waitUntil(pool, waiting: 3)
        do {
            _ = try await pool.run(key: "c") { 1 }
            XCTFail("a fourth job was queued")
        } catch {
            XCTAssertEqual(error as? KDFQueueError, .full)
        }
        gate.release()
        try await blocker.value
        for task in queued + [other] {
            let value = try await task.value
            XCTAssertEqual(value, 1)
        }
    }

    func testWorkWhoseCallerLeftIsNeverRun() async throws {
        let pool = KDFThreadPool(threadCount: 1)
        let (gate, blocker) = await blocked(pool)
        let runs = Counter()
        let late = Task { try await pool.run(deadline: .now + .milliseconds(20)) { runs.add() } }
        let cancelled = Task { try await pool.run { runs.add() } }
        try await waitUntil(pool, waiting: 2)
        cancelled.cancel()
        try await Task.sleep(for: .milliseconds(50))
        gate.release()
        try await blocker.value
        do {
            try await late.value
            XCTFail("ran after its deadline")
        } catch {
            XCTAssertEqual(error as? KDFQueueError, .deadlineExceeded)
        }
        do {
            try await cancelled.value
            XCTFail("ran after its caller was cancelled")
        } catch {
            XCTAssertEqual(error as? KDFQueueError, .cancelled)
        }
        XCTAssertEqual(runs.value, 0, "neither was derived")
        try await pool.run { runs.add() }
        XCTAssertEqual(runs.value, 1, "the pool goes on")
    }

    /// A cancelled caller leaves the queue at once (its place freed for a live caller, its task resumed),
    /// not when a thread gets to it.
    func testACancelledCallerLeavesTheQueueAtOnce() async throws {
        let pool = KDFThreadPool(threadCount: 1, queueLimit: 1, perKeyLimit: 1)
        let (gate, blocker) = await blocked(pool)
        let runs = Counter()
        let abandoned = Task { try await pool.run(key: "a") { runs.add() } }
        try await waitUntil(pool, waiting: 1)
        abandoned.cancel()
        do {
            try await abandoned.value
            XCTFail("ran after its caller was cancelled")
        } catch {
            XCTAssertEqual(error as? KDFQueueError, .cancelled, "resumed while the thread is still blocked")
        }
        XCTAssertEqual(pool.waiting, 0)
        let live = Task { try await pool.run(key: "b") { runs.add() } }
        try await waitUntil(pool, waiting: 1)  // the freed place was taken, not refused as full
        gate.release()
        try await blocker.value
        try await live.value
        XCTAssertEqual(runs.value, 1, "only the live caller's work ran")
    }

    func testAnotherKeyGoesBeforeAFlood() async throws {
        let pool = KDFThreadPool(threadCount: 1)
        let (gate, blocker) = await blocked(pool, key: "flood")
        let order = Recorder()
        let flood = (0..<4).map { index in Task { try await pool.run(key: "flood") { order.add("flood-\(index)") } } }
        try await waitUntil(pool, waiting: 4)
        let legit = Task { try await pool.run(key: "legit") { order.add("legit") } }
        try await waitUntil(pool, waiting: 5)
        gate.release()
        try await blocker.value
        try await legit.value
        for task in flood { try await task.value }
        XCTAssertEqual(order.values.first, "legit", "\(order.values)")
    }

    func testOneKeyNeverHoldsEveryThread() async throws {
        let pool = KDFThreadPool(threadCount: 2)
        let (gate, blocker) = await blocked(pool, key: "flood")
        let order = Recorder()
        let flood = (0..<3).map { index in Task { try await pool.run(key: "flood") { order.add("flood-\(index)") } } }
        try await waitUntil(pool, waiting: 3)
        try await pool.run(key: "legit") { order.add("legit") }
        XCTAssertEqual(order.values, ["legit"], "the second thread waited for another key, the flood did not take it")
        gate.release()
        try await blocker.value
        for task in flood { try await task.value }
        XCTAssertEqual(order.values.count, 4)
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

private final class Recorder: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func add(_ value: String) { lock.withLock { list.append(value) } }
    var values: [String] { lock.withLock { list } }
}
