import XCTest

@testable import ServiceRuntime

/// The outbox worker's wake-up: a timeout waits its time every time, a signal wakes at once.
final class WakeUpSignalTests: XCTestCase {
    /// Before, the first timeout cancelled the stream's consumer, which finished the stream: every later
    /// wait returned at once and an idle service polled its database on a whole core.
    func testEveryTimeoutWaitsItsTimeNotOnlyTheFirst() async {
        let signal = WakeUpSignal()
        for round in 0..<3 {
            let start = ContinuousClock.now
            await signal.wait(timeout: .milliseconds(50))
            XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .milliseconds(45), "round \(round)")
        }
    }

    func testASignalWakesAtOnceAndSignalsCoalesce() async {
        let signal = WakeUpSignal()
        signal.signal()
        signal.signal()
        var start = ContinuousClock.now
        await signal.wait(timeout: .seconds(10))
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1), "a pending signal")
        start = ContinuousClock.now
        await signal.wait(timeout: .milliseconds(50))
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .milliseconds(45), "two signals were one")
        Task {
            try? await Task.sleep(for: .milliseconds(20))
            signal.signal()
        }
        start = ContinuousClock.now
        await signal.wait(timeout: .seconds(10))
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1), "a signal while waiting")
    }
}
