import Dispatch
import NIOCore
import NIOPosix
import RPCTestSupport
import XCTest

@testable import RPCCore

/// The executor that runs handler tasks on their connection's loop, from its own queue of jobs.
final class EventLoopExecutorTests: XCTestCase {
    private var group: MultiThreadedEventLoopGroup!
    private var executor: EventLoopExecutor!

    override func setUp() {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        executor = EventLoopExecutor(group.next())
    }

    override func tearDown() async throws {
        try await group.shutdownGracefully()
    }

    /// Tasks started from one thread run on the loop, in the order their first jobs were enqueued.
    func testJobsRunOnTheLoopInTheOrderTheyWereEnqueued() async throws {
        let loop = executor.eventLoop
        let runs = LockedValue<[Run]>([])
        for index in 0..<500 {
            Task(executorPreference: executor) {
                runs.withLock { $0.append(Run(index: index, onLoop: loop.inEventLoop)) }
            }
        }
        try await waitUntil { runs.value.count == 500 }
        let seen = runs.value
        XCTAssertEqual(seen.map(\.index), Array(0..<500))
        XCTAssertTrue(seen.allSatisfy(\.onLoop), "every job should run on the executor's loop")
    }

    /// Jobs enqueued from many threads at once, while the loop runs earlier ones, all run, once.
    func testJobsEnqueuedFromManyThreadsAllRunOnce() async throws {
        let executor = executor!
        let loop = executor.eventLoop
        let runs = LockedValue<[Int: Int]>([:])
        let offLoop = LockedValue(0)
        let finished = LockedValue(0)
        await withTaskGroup(of: Void.self) { starters in
            for thread in 0..<8 {
                starters.addTask { @concurrent in
                    for index in 0..<250 {
                        Task(executorPreference: executor) {
                            if !loop.inEventLoop { offLoop.withLock { $0 += 1 } }
                            runs.withLock { $0[thread * 1_000 + index, default: 0] += 1 }
                            // A suspension in the middle: the rest is a job of its own.
                            await Task.yield()
                            if !loop.inEventLoop { offLoop.withLock { $0 += 1 } }
                            finished.withLock { $0 += 1 }
                        }
                    }
                }
            }
        }
        try await waitUntil { finished.value == 2_000 }
        XCTAssertEqual(finished.value, 2_000, "a task never finished")
        let counts = runs.value
        XCTAssertEqual(counts.count, 2_000)
        XCTAssertTrue(counts.values.allSatisfy { $0 == 1 }, "a job ran twice")
        XCTAssertEqual(offLoop.value, 0, "a job ran off the loop")
    }

    /// A task that keeps yielding re-enqueues itself forever; the loop's other work still runs, because
    /// a job enqueued while a batch runs waits for the next batch.
    func testATaskThatKeepsYieldingDoesNotStarveTheLoop() async throws {
        let stop = LockedValue(false)
        let yields = LockedValue(0)
        let spinnerDone = LockedValue(false)
        Task(executorPreference: executor) {
            while !stop.value {
                yields.withLock { $0 += 1 }
                await Task.yield()
            }
            spinnerDone.withLock { $0 = true }
        }
        try await waitUntil { yields.value >= 100 }
        guard yields.value >= 100 else {
            stop.withLock { $0 = true }
            return XCTFail("the spinner's jobs stopped being run")
        }
        // Once the spinner is going, a plain loop task must get its turn. Should it not, the spinner is
        // stopped after 10 s, so that the test fails instead of hanging.
        let giveUp = Task {
            try await Task.sleep(for: .seconds(10))
            stop.withLock { $0 = true }
        }
        let (yieldsBefore, stoppedFirst) = try await executor.eventLoop.submit { (yields.value, stop.value) }.get()
        giveUp.cancel()
        stop.withLock { $0 = true }
        try await waitUntil { spinnerDone.value }
        XCTAssertFalse(stoppedFirst, "the loop's task ran only once the spinner had stopped")
        XCTAssertGreaterThanOrEqual(yieldsBefore, 100)
        XCTAssertTrue(spinnerDone.value, "the spinner never saw the stop")
    }

    /// Jobs enqueued while the loop is busy wait and then all run, in order, when it is free.
    func testJobsQueuedWhileTheLoopIsBusyRunInOrder() async throws {
        let release = DispatchSemaphore(value: 0)
        let busy = executor.eventLoop.submit { release.wait() }
        let order = LockedValue<[Int]>([])
        for index in 0..<100 {
            Task(executorPreference: executor) { order.withLock { $0.append(index) } }
        }
        try await Task.sleep(for: .milliseconds(20))
        XCTAssertEqual(order.value, [], "nothing should run while the loop is busy")
        release.signal()
        try await busy.get()
        try await waitUntil { order.value.count == 100 }
        XCTAssertEqual(order.value, Array(0..<100))
    }

    /// Waits until `done` holds, for at most 10 s: a job that is never run fails the test (by what it
    /// then finds) instead of hanging it.
    private func waitUntil(_ done: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !done(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
    }

    private struct Run {
        let index: Int
        let onLoop: Bool
    }
}
