import Foundation
import XCTest

@testable import LoadGenerator

/// Send→deliver matching with made-up instants: nothing waits.
final class DeliveryMatcherTests: XCTestCase {
    let start = ContinuousClock.now

    func testEachReceiverCountsOnceFromTheSendsStart() {
        let matcher = DeliveryMatcher<ContinuousClock.Instant>()
        matcher.expect("mix-1", from: start, receivers: 2)
        matcher.expect("mix-2", from: start + .milliseconds(10), receivers: 1)
        XCTAssertEqual(matcher.outstanding, 3)
        XCTAssertTrue(matcher.delivered("mix-1", at: start + .milliseconds(3)))
        XCTAssertTrue(matcher.delivered("mix-2", at: start + .milliseconds(14)))
        XCTAssertTrue(matcher.delivered("mix-1", at: start + .milliseconds(5)))
        XCTAssertEqual(matcher.outstanding, 0)
        XCTAssertFalse(matcher.delivered("mix-1", at: start + .milliseconds(6)), "one more copy than receivers")
        let summary = matcher.summary(streams: 4)
        XCTAssertEqual(summary.delivered, 3)
        XCTAssertEqual(summary.expected, 3)
        XCTAssertEqual(summary.undelivered, 0)
        XCTAssertEqual(summary.unmatched, 1)
        XCTAssertEqual(summary.streams, 4)
        XCTAssertEqual(summary.latencies.latencies.min, 3_000_000, "3 ms, from the start of mix-1")
        XCTAssertEqual(
            Double(summary.latencies.latencies.max), 5_000_000, accuracy: 5_000, "5 ms within the histogram's 0.1%")
    }

    func testADeliveryThatBeatsTheSendsAnswerIsMatched() {
        // The sender registers before it sends; the event may arrive before the reply does.
        let matcher = DeliveryMatcher<ContinuousClock.Instant>()
        matcher.expect("k", from: start, receivers: 1)
        XCTAssertTrue(matcher.delivered("k", at: start + .microseconds(800)))
        XCTAssertEqual(matcher.summary(streams: 1).delivered, 1)
    }

    func testMissingDeliveriesAreUndeliveredAndUnknownKeysUnmatched() {
        let matcher = DeliveryMatcher<ContinuousClock.Instant>()
        matcher.expect("a", from: start, receivers: 3)
        matcher.delivered("a", at: start + .milliseconds(1))
        matcher.delivered("someone else's", at: start + .milliseconds(1))
        let summary = matcher.summary(streams: 3, streamEnds: ["RESOURCE_EXHAUSTED": 1])
        XCTAssertEqual(summary.expected, 3)
        XCTAssertEqual(summary.delivered, 1)
        XCTAssertEqual(summary.undelivered, 2)
        XCTAssertEqual(summary.unmatched, 1)
        XCTAssertEqual(summary.streamEnds, ["RESOURCE_EXHAUSTED": 1])
    }

    func testAFailedSendIsWithdrawnAndNoListenerExpectsNothing() {
        let matcher = DeliveryMatcher<ContinuousClock.Instant>()
        matcher.expect("failed", from: start, receivers: 2)
        matcher.expect("nobody listens", from: start, receivers: 0)
        XCTAssertEqual(matcher.outstanding, 2)
        matcher.withdraw("failed")
        XCTAssertEqual(matcher.outstanding, 0)
        XCTAssertFalse(matcher.delivered("failed", at: start + .milliseconds(1)))
        XCTAssertFalse(matcher.delivered("nobody listens", at: start + .milliseconds(1)))
        let summary = matcher.summary(streams: 0)
        XCTAssertEqual(summary.expected, 0)
        XCTAssertEqual(summary.delivered, 0)
        XCTAssertEqual(summary.unmatched, 2)
    }

    func testAReusedKeyReplacesItsOutstandingDeliveries() {
        let matcher = DeliveryMatcher<ContinuousClock.Instant>()
        matcher.expect("k", from: start, receivers: 2)
        matcher.delivered("k", at: start + .milliseconds(1))
        matcher.expect("k", from: start + .seconds(1), receivers: 2)
        XCTAssertEqual(matcher.outstanding, 2)
        XCTAssertEqual(matcher.summary(streams: 2).expected, 3, "the one delivered, and the new two")
    }

    func testTheReportHasASendToDeliverLineAndObject() throws {
        let matcher = DeliveryMatcher<ContinuousClock.Instant>()
        matcher.expect("a", from: start, receivers: 2)
        matcher.delivered("a", at: start + .milliseconds(2))
        var tally = LoadTally()
        tally.record(latency: .milliseconds(1), status: LoadTally.ok)
        let report = LoadReport(
            method: "yedi-mix", target: "a, b", plan: LoadPlan(concurrency: 1, limit: .total(1)), connections: 1,
            tally: tally, elapsed: .seconds(1), operations: ["Chat/Send": tally],
            deliveries: matcher.summary(streams: 20, streamEnds: ["UNAVAILABLE": 1]))
        let text = report.text
        XCTAssertTrue(
            text.hasSuffix(
                "\n  send→deliver  p50 2.000  p90 2.000  p99 2.000  p99.9 2.000  max 2.001 ms; 1 of 2 deliveries to "
                    + "20 streams (1 undelivered; streams ended early: UNAVAILABLE 1)"), text)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let deliveries = try XCTUnwrap(json["sendToDeliver"] as? [String: Any], report.json)
        XCTAssertEqual(deliveries["count"] as? Int, 1)
        XCTAssertEqual(deliveries["expected"] as? Int, 2)
        XCTAssertEqual(deliveries["undelivered"] as? Int, 1)
        XCTAssertEqual(deliveries["streams"] as? Int, 20)
        XCTAssertEqual(deliveries["streamEnds"] as? [String: Int], ["UNAVAILABLE": 1])
        XCTAssertEqual(deliveries["p99"] as? Double, 2)
        XCTAssertNil(
            try XCTUnwrap(
                JSONSerialization.jsonObject(
                    with: Data(
                        LoadReport(
                            method: "m", target: "t", plan: LoadPlan(concurrency: 1, limit: .total(1)), connections: 1,
                            tally: tally,
                            elapsed: .seconds(1)
                        ).json.utf8)) as? [String: Any])["sendToDeliver"], "no streams, no figure")
    }

    func testNoDeliveriesSaysSo() {
        let summary = DeliveryMatcher<ContinuousClock.Instant>().summary(streams: 5)
        XCTAssertEqual(
            LoadReport.deliveryLine(summary), "  send→deliver  no deliveries; 0 of 0 deliveries to 5 streams")
    }
}
