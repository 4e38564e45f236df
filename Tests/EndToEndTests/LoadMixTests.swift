import Foundation
import XCTest

/// `yedi-probe load --scenario yedi-mix` against the four real executables: it signs its users up
/// through the public RPCs (the codes from AccountService's development mailbox) and every call of the
/// mix succeeds, on every service.
final class LoadMixTests: XCTestCase {
    private var system: YediSystem!

    override func setUpWithError() throws {
        system = try YediSystem()
        try system.startAll()
    }

    override func tearDownWithError() throws {
        system?.stopAll()
        system = nil
    }

    func testYediMixSeedsThroughPublicRPCsAndDrivesEveryService() throws {
        let result = try system.runProbe(
            [
                "load", "--scenario", "yedi-mix", "--account", system.address("account"), "--content",
                system.address("content"), "--booking", system.address("booking"), "--chat", system.address("chat"),
                "--sent-mail", system.dataDirectory("account").appendingPathComponent("sent-mail").path,
                "--total", "400", "-c", "8", "--json", "--no-progress",
            ], timeout: 240)
        XCTAssertEqual(result.exitCode, 0, result.errorOutput)
        XCTAssertTrue(
            result.errorOutput.hasPrefix("yedi-mix: signing up 2 designers and 3 customers"), result.errorOutput)
        let report = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], result.output)
        XCTAssertEqual(report["calls"] as? Int, 400)
        XCTAssertEqual(report["statuses"] as? [String: Int], ["OK": 400], result.output)
        XCTAssertNotNil(report["p99"] as? Double)
        let operations = try XCTUnwrap(report["operations"] as? [String: [String: Any]], result.output)
        let expected = [
            "yedi.account.AccountService/SearchDesigners", "yedi.account.AccountService/GetDesigner",
            "yedi.content.ContentService/GetFeed", "yedi.content.ContentService/ListDesignerPosts",
            "yedi.booking.BookingService/ListFreeSlots", "yedi.booking.BookingService/GetSchedule",
            "yedi.chat.ChatService/SendMessage", "yedi.chat.ChatService/ListMessages",
        ]
        XCTAssertEqual(Set(operations.keys), Set(expected))
        var sum = 0
        for (name, operation) in operations {
            let calls = try XCTUnwrap(operation["calls"] as? Int, name)
            XCTAssertGreaterThan(calls, 0, name)
            XCTAssertEqual(operation["statuses"] as? [String: Int], ["OK": calls], name)
            sum += calls
        }
        XCTAssertEqual(sum, 400)
    }
}
