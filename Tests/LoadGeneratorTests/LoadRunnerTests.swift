import NIOConcurrencyHelpers
import XCTest

@testable import LoadGenerator

/// The runner with a stand-in for the RPC: what it counts, not how fast it goes.
final class LoadRunnerTests: XCTestCase {
    func testEveryCallIsMadeOnceAndCountedWithItsStatus() async {
        let made = NIOLockedValueBox<[UInt64]>([])
        let inFlight = NIOLockedValueBox((now: 0, most: 0))
        let runner = LoadRunner(plan: LoadPlan(concurrency: 7, limit: .total(300)))
        let result = await runner.run { sequence in
            inFlight.withLockedValue {
                $0.now += 1
                $0.most = max($0.most, $0.now)
            }
            await Task.yield()
            made.withLockedValue { $0.append(sequence) }
            inFlight.withLockedValue { $0.now -= 1 }
            return sequence % 10 == 0 ? "RESOURCE_EXHAUSTED" : LoadTally.ok
        }
        XCTAssertEqual(made.withLockedValue { $0.sorted() }, Array(0..<300))
        XCTAssertEqual(result.tally.calls, 300)
        XCTAssertEqual(result.tally.statuses, ["OK": 270, "RESOURCE_EXHAUSTED": 30])
        XCTAssertLessThanOrEqual(inFlight.withLockedValue { $0.most }, 7)
        XCTAssertFalse(result.interrupted)
    }

    /// At a rate far above what the stand-in needs, every scheduled call is made once; nothing is timed.
    func testOpenModelMakesEveryScheduledCall() async {
        let made = NIOLockedValueBox<Set<UInt64>>([])
        let runner = LoadRunner(plan: LoadPlan(concurrency: 3, limit: .total(120), pacer: RatePacer(rate: 1_000_000)))
        let result = await runner.run { sequence in
            made.withLockedValue { _ = $0.insert(sequence) }
            return LoadTally.ok
        }
        XCTAssertEqual(made.withLockedValue { $0 }, Set(0..<120))
        XCTAssertEqual(result.tally.statuses, ["OK": 120])
    }

    func testCancellingTheRunStopsItAndKeepsWhatWasCounted() async {
        let started = NIOLockedValueBox(0)
        let runner = LoadRunner(plan: LoadPlan(concurrency: 4, limit: .duration(.seconds(3600))))
        let run = Task {
            await runner.run { sequence in
                started.withLockedValue { $0 += 1 }
                if sequence < 10 { return LoadTally.ok }
                // Later calls hang until cancelled, as a call to a stuck server would.
                try? await Task.sleep(for: .seconds(3600))
                return Task.isCancelled ? "CANCELLED" : LoadTally.ok
            }
        }
        while started.withLockedValue({ $0 }) < 14 { await Task.yield() }
        run.cancel()
        let result = await run.value
        XCTAssertTrue(result.interrupted)
        XCTAssertEqual(result.tally.statuses, ["OK": 10, "CANCELLED": 4])
    }

    func testWorkersShareAFewTalliesWhateverTheConcurrency() {
        XCTAssertEqual(LoadRunner.shardCount(concurrency: 1), 1)
        XCTAssertEqual(LoadRunner.shardCount(concurrency: 5), 5)
        XCTAssertEqual(LoadRunner.shardCount(concurrency: 5000), 16)
    }
}
