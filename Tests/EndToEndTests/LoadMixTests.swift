import Foundation
import XCTest

/// `yedi-probe load --scenario yedi-mix` against the four real executables: it seeds its data set
/// through the public RPCs (sign-ups with the codes from AccountService's development mailbox, hours,
/// posts with photos, follows, reservations, rooms), every call of the mix succeeds, on every service,
/// and with `--streams` the sends reach the live streams (send→deliver).
final class LoadMixTests: RunningSystemTestCase {
    func testYediMixSeedsThroughPublicRPCsAndDrivesEveryService() throws {
        let result = try system.runProbe(
            [
                "load", "--scenario", "yedi-mix", "--account", system.address("account"), "--content",
                system.address("content"), "--booking", system.address("booking"), "--chat", system.address("chat"),
                "--sent-mail", system.dataDirectory("account").appendingPathComponent("sent-mail").path,
                "--total", "500", "-c", "8", "--streams", "20", "--json", "--no-progress",
            ], timeout: 240)
        XCTAssertEqual(result.exitCode, 0, result.errorOutput)
        XCTAssertTrue(
            result.errorOutput.hasPrefix("yedi-mix: signing up 2 designers and 3 customers"), result.errorOutput)
        let report = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], result.output)
        XCTAssertTrue(result.errorOutput.contains("yedi-mix: opening 20 chat streams"), result.errorOutput)
        XCTAssertEqual(report["calls"] as? Int, 500)
        XCTAssertEqual(report["statuses"] as? [String: Int], ["OK": 500], result.output)
        XCTAssertNotNil(report["p99"] as? Double)
        let operations = try XCTUnwrap(report["operations"] as? [String: [String: Any]], result.output)
        let expected = [
            "yedi.account.AccountService/SearchDesigners", "yedi.account.AccountService/GetDesigner",
            "yedi.content.ContentService/GetFeed", "yedi.content.ContentService/ListDesignerPosts",
            "yedi.booking.BookingService/ListFreeSlots", "yedi.booking.BookingService/GetSchedule",
            "yedi.chat.ChatService/SendMessage", "yedi.chat.ChatService/ListMessages",
            "yedi.content.ContentService/GetFeed (following)", "yedi.content.ContentService/GetPost",
            "yedi.content.ContentService/Like", "yedi.content.ContentService/Unlike",
            "yedi.booking.BookingService/ListReservations", "yedi.booking.BookingService/CreateReservation",
            "yedi.booking.BookingService/CancelReservation", "yedi.chat.ChatService/MarkRead",
        ]
        XCTAssertEqual(Set(operations.keys), Set(expected))
        var sum = 0
        for (name, operation) in operations {
            let calls = try XCTUnwrap(operation["calls"] as? Int, name)
            XCTAssertGreaterThan(calls, 0, name)
            XCTAssertEqual(operation["statuses"] as? [String: Int], ["OK": calls], name)
            sum += calls
        }
        XCTAssertEqual(sum, 500)

        // 20 streams over 5 users: 4 each, so every room has live members; every SendMessage is expected
        // at the 8 streams of its room's two members, and all of them arrive.
        let sends = try XCTUnwrap(operations["yedi.chat.ChatService/SendMessage"]?["calls"] as? Int)
        let deliveries = try XCTUnwrap(report["sendToDeliver"] as? [String: Any], result.output)
        XCTAssertEqual(deliveries["streams"] as? Int, 20, result.output)
        XCTAssertEqual(deliveries["expected"] as? Int, sends * 8, result.output)
        XCTAssertEqual(deliveries["count"] as? Int, sends * 8, result.output)
        XCTAssertEqual(deliveries["undelivered"] as? Int, 0, result.output)
        XCTAssertEqual(deliveries["unmatched"] as? Int, 0, result.output)
        XCTAssertEqual(deliveries["streamEnds"] as? [String: Int], [:], result.output)
        XCTAssertNotNil(deliveries["p99"] as? Double, result.output)
    }

    /// Without `--streams` nothing listens, and the report has no send→deliver.
    func testYediMixWithoutStreamsReportsNoDeliveries() throws {
        let result = try system.runProbe(
            [
                "load", "--scenario", "yedi-mix", "--account", system.address("account"), "--content",
                system.address("content"), "--booking", system.address("booking"), "--chat", system.address("chat"),
                "--sent-mail", system.dataDirectory("account").appendingPathComponent("sent-mail").path,
                "--designers", "1", "--customers", "1", "--posts", "1", "--total", "60", "-c", "2", "--no-progress",
            ], timeout: 240)
        XCTAssertEqual(result.exitCode, 0, result.errorOutput)
        XCTAssertTrue(result.output.contains("  calls     60 in "), result.output)
        XCTAssertTrue(result.output.contains("  statuses  OK 60\n"), result.output)
        XCTAssertFalse(result.output.contains("send→deliver"), result.output)
    }
}
