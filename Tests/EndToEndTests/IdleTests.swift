import Foundation
import XCTest

/// An idle service uses no CPU: no client, an empty data folder, nothing due. (Each idle service once
/// took a third of a core, polling its outbox in a loop, beside every benchmark.)
final class IdleTests: XCTestCase {
    private var system: YediSystem!

    override func setUpWithError() throws {
        system = try YediSystem()
    }

    override func tearDownWithError() throws {
        system.stopAll()
        system = nil
    }

    /// A wide bound (5% of a core over 20 s) so that it is not flaky; the goal is at most 0.5%.
    func testEachIdleServiceUsesLessThanFivePercentOfACore() throws {
        try system.startAll()
        Thread.sleep(forTimeInterval: 5)  // settle: migrations, first polls, connections to peers
        let window: Duration = .seconds(20)
        var before: [String: Duration] = [:]
        for service in YediSystem.services {
            before[service] = try XCTUnwrap(system.cpuTime(service), "\(service): CPU time unreadable")
        }
        Thread.sleep(forTimeInterval: 20)
        for service in YediSystem.services {
            let used = try XCTUnwrap(system.cpuTime(service), "\(service): CPU time unreadable") - before[service]!
            let share = used / window
            print("idle \(service): \(used) CPU over \(window) = \(String(format: "%.2f", share * 100))% of a core")
            XCTAssertLessThan(share, 0.05, "\(service) used \(used) of CPU in \(window) while idle")
        }
    }
}
