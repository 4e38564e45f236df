import Histogram
import XCTest

@testable import LoadGenerator

final class LoadTallyTests: XCTestCase {
    func testMergingSharesEqualsRecordingEverythingInOne() {
        var shares = [LoadTally(), LoadTally(), LoadTally()]
        var whole = LoadTally()
        for index in 0..<3000 {
            let latency = Duration.microseconds(50 + (index * 7919) % 20_000)
            let status = index % 100 == 0 ? "UNAVAILABLE" : LoadTally.ok
            shares[index % 3].record(latency: latency, status: status)
            whole.record(latency: latency, status: status)
        }
        var merged = LoadTally()
        for share in shares { merged.merge(share) }
        XCTAssertEqual(merged, whole)
        XCTAssertEqual(merged.calls, 3000)
        XCTAssertEqual(merged.statuses, ["OK": 2970, "UNAVAILABLE": 30])
        XCTAssertEqual(merged.failures, 30)
        for percentile in [50.0, 90, 99, 99.9, 100] {
            XCTAssertEqual(
                merged.latencies.valueAtPercentile(percentile), whole.latencies.valueAtPercentile(percentile))
        }
        // 0.1% resolution: the largest latency recorded was 20.049 ms.
        XCTAssertEqual(Double(merged.latencies.max), 20_049_000, accuracy: 20_049)
    }

    func testOutOfRangeLatenciesAreClampedNotLost() {
        var tally = LoadTally()
        tally.record(latency: .milliseconds(-5), status: "OK")
        tally.record(latency: .seconds(7200), status: "DEADLINE_EXCEEDED")
        tally.record(latency: .seconds(Int64.max / 2), status: "DEADLINE_EXCEEDED")
        XCTAssertEqual(tally.calls, 3)
        XCTAssertEqual(tally.latencies.min, 0)
        XCTAssertTrue(tally.latencies.valuesAreEquivalent(tally.latencies.max, LoadTally.highestLatency))
    }
}
