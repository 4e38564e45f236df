import Foundation
import XCTest

@testable import LoadGenerator

final class LoadReportTests: XCTestCase {
    func report(_ tally: LoadTally, pacer: RatePacer? = nil) -> LoadReport {
        LoadReport(
            method: "yedi.echo.Echo/Echo", target: "127.0.0.1:4433",
            plan: LoadPlan(concurrency: 8, limit: .total(200), pacer: pacer), connections: 2, tally: tally,
            elapsed: .milliseconds(500))
    }

    func object(_ json: String) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], json)
    }

    func testJSONHasTheRateStatusesAndPercentilesInMilliseconds() throws {
        var tally = LoadTally()
        for index in 1...198 { tally.record(latency: .microseconds(index * 10), status: LoadTally.ok) }
        tally.record(latency: .milliseconds(40), status: "UNAVAILABLE")
        tally.record(latency: .milliseconds(40), status: "UNAVAILABLE")
        let json = try object(report(tally, pacer: RatePacer(rate: 400)).json)
        XCTAssertEqual(json["method"] as? String, "yedi.echo.Echo/Echo")
        XCTAssertEqual(json["calls"] as? Int, 200)
        XCTAssertEqual(json["errors"] as? Int, 2)
        XCTAssertEqual(json["callsPerSecond"] as? Double, 400)
        XCTAssertEqual(json["statuses"] as? [String: Int], ["OK": 198, "UNAVAILABLE": 2])
        XCTAssertEqual(json["rate"] as? Double, 400)
        XCTAssertEqual(json["concurrency"] as? Int, 8)
        XCTAssertEqual(json["connections"] as? Int, 2)
        XCTAssertEqual(json["latencyUnit"] as? String, "ms")
        XCTAssertEqual(try XCTUnwrap(json["p50"] as? Double), 1.0, accuracy: 0.01)
        XCTAssertEqual(try XCTUnwrap(json["p90"] as? Double), 1.8, accuracy: 0.01)
        XCTAssertEqual(try XCTUnwrap(json["p99"] as? Double), 1.98, accuracy: 0.01, "2 calls of 200 are 1%")
        XCTAssertEqual(try XCTUnwrap(json["p99.9"] as? Double), 40, accuracy: 0.05)
        XCTAssertEqual(try XCTUnwrap(json["max"] as? Double), 40, accuracy: 0.05)
        XCTAssertNotNil(json["mean"] as? Double)
    }

    func testTextNamesEveryFigure() {
        var tally = LoadTally()
        tally.record(latency: .milliseconds(2), status: "NOT_FOUND")
        tally.record(latency: .milliseconds(1), status: LoadTally.ok)
        let text = report(tally).text
        XCTAssertTrue(text.hasPrefix("yedi.echo.Echo/Echo at 127.0.0.1:4433: 8 workers on 2 connections"), text)
        XCTAssertTrue(text.contains("2 in 0.50 s = 4.0 calls/s"), text)
        XCTAssertTrue(text.contains("statuses  OK 1, NOT_FOUND 1"), text)
        for name in ["p50", "p90", "p99", "p99.9", "max"] { XCTAssertTrue(text.contains(" \(name) "), text) }
    }

    func testAScenarioReportsEachMethodToo() throws {
        var search = LoadTally()
        search.record(latency: .milliseconds(3), status: LoadTally.ok)
        var send = LoadTally()
        send.record(latency: .milliseconds(1), status: "UNAVAILABLE")
        var all = search
        all.merge(send)
        let report = LoadReport(
            method: "yedi-mix", target: "a, b", plan: LoadPlan(concurrency: 1, limit: .total(2)), connections: 1,
            tally: all, elapsed: .seconds(1), operations: ["Chat/Send": send, "Account/Search": search])
        let text = report.text
        XCTAssertTrue(text.contains("\n  Account/Search: 1 calls, OK 1; p50 3.000  p99 3.000  max 3.000 ms\n"), text)
        XCTAssertTrue(text.hasSuffix("\n  Chat/Send: 1 calls, UNAVAILABLE 1; p50 1.000  p99 1.000  max 1.000 ms"), text)
        let operations = try XCTUnwrap(object(report.json)["operations"] as? [String: [String: Any]])
        XCTAssertEqual(operations["Chat/Send"]?["statuses"] as? [String: Int], ["UNAVAILABLE": 1])
        XCTAssertEqual(operations["Account/Search"]?["p99"] as? Double, 3)
        XCTAssertNil(try object(self.report(all).json)["operations"], "a single method has no breakdown")
    }

    func testNoCallsGivesNullsNotNonsense() throws {
        let json = try object(report(LoadTally()).json)
        XCTAssertEqual(json["calls"] as? Int, 0)
        XCTAssertTrue(json["p99"] is NSNull)
        XCTAssertTrue(json["rate"] is NSNull, "closed model")
        XCTAssertTrue(report(LoadTally()).text.contains("no calls"))
    }

    func testStatusesListOKFirstThenByCount() {
        var tally = LoadTally()
        for status in ["B", "A", "A", "OK", "C", "C"] { tally.record(latency: .zero, status: status) }
        XCTAssertEqual(report(tally).sortedStatuses.map(\.name), ["OK", "A", "C", "B"])
    }

    func testProgressLineShowsWhereTheRunIs() {
        let timed = ProgressLine(
            elapsed: .milliseconds(3200), calls: 1234, failures: 1, recentRate: 411.6, limit: .duration(.seconds(10)))
        XCTAssertEqual(timed.text, "[3 s/10 s] 1234 calls, 412 calls/s, 1 error")
        let counted = ProgressLine(elapsed: .seconds(1), calls: 50, failures: 0, recentRate: 50, limit: .total(200))
        XCTAssertEqual(counted.text, "[1 s, 50/200] 50 calls, 50 calls/s, 0 errors")
    }
}
