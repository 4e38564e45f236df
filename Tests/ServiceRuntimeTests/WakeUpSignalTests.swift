import XCTest

@testable import ServiceRuntime

/// The outbox worker's wake-up: a timed-out wait must not break later waits (it once did, and every idle
/// service spun at a third of a core polling its outbox).
final class WakeUpSignalTests: XCTestCase {
    func testWakeUpAfterATimedOutWaitStillArrivesPromptly() async {
        let signal = WakeUpSignal()
        await signal.wait(timeout: .milliseconds(20))
        let clock = ContinuousClock()
        let start = clock.now
        let signaller = Task {
            try? await Task.sleep(for: .milliseconds(100))
            signal.signal()
        }
        await signal.wait(timeout: .seconds(30))
        let waited = clock.now - start
        _ = await signaller.value
        XCTAssertGreaterThanOrEqual(waited, .milliseconds(95), "the wait returned before the signal")
        XCTAssertLessThan(waited, .seconds(10), "the signal after a timed-out wait did not wake the waiter")
    }

    func testWakeUpWaitWithoutASignalLastsItsWholeTimeout() async {
        let signal = WakeUpSignal()
        let clock = ContinuousClock()
        for round in 0..<5 {
            let waited = await clock.measure { await signal.wait(timeout: .milliseconds(150)) }
            XCTAssertGreaterThanOrEqual(waited, .milliseconds(145), "wait \(round) returned early")
        }
    }

    func testWakeUpSentWhileNobodyWaitsIsKeptForTheNextWaitCoalescedToOne() async {
        let signal = WakeUpSignal()
        signal.signal()
        signal.signal()
        signal.signal()
        let clock = ContinuousClock()
        let first = await clock.measure { await signal.wait(timeout: .seconds(30)) }
        XCTAssertLessThan(first, .seconds(5), "the pending signal was not kept")
        let second = await clock.measure { await signal.wait(timeout: .milliseconds(150)) }
        XCTAssertGreaterThanOrEqual(second, .milliseconds(145), "three signals woke more than one wait")
    }

    func testWakeUpCancelledWaitReturnsAndLeavesLaterWaitsWorking() async {
        let signal = WakeUpSignal()
        let waiter = Task { await signal.wait(timeout: .seconds(30)) }
        try? await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        let clock = ContinuousClock()
        let cancelled = await clock.measure { await waiter.value }
        XCTAssertLessThan(cancelled, .seconds(5))
        let idle = await clock.measure { await signal.wait(timeout: .milliseconds(150)) }
        XCTAssertGreaterThanOrEqual(idle, .milliseconds(145), "a cancelled wait left a wake-up behind")
        Task {
            try? await Task.sleep(for: .milliseconds(50))
            signal.signal()
        }
        let woken = await clock.measure { await signal.wait(timeout: .seconds(30)) }
        XCTAssertLessThan(woken, .seconds(10))
    }
}
