import Foundation
import RPCCore
import RPCTestSupport
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// Logs outlive accounts: a purge's lines and the request lines name users by a keyed tag
/// (`user=h:` + 16 hex digits), never by their id.
final class PurgeLogTests: XCTestCase {
    private typealias F = BookingFixture

    func testAPurgesLogLinesAndTheRequestLinesDoNotContainTheUserID() async throws {
        let logs = LogCapture()
        let fixture = try await BookingFixture.start(logs: logs)
        try await fixture.addDesigner("designer-1")
        let secret = "customer-7f3e9c"
        let menu = try await fixture.booking.getMenu(.init(designerID: "designer-1"))
        _ = try await fixture.booking.createReservation(
            .init(
                designerID: "designer-1", startAtMs: F.ms(F.seoul(2027, 3, 11, hour: 14)),
                styleIDs: [menu.styles[0].id]),
            options: try fixture.customer(secret))
        let (account, rpc, task) = try await fixture.serviceClient("account")
        _ = try await account.purgeUser(.init(userID: secret))
        rpc.beginGracefulShutdown()
        await task.value
        try await fixture.stop()

        let purge = logs.lines.filter { $0.contains("purge user") }
        XCTAssertEqual(purge.count, 1, logs.lines.joined(separator: "\n"))
        let tag = try XCTUnwrap(purge.first?.firstMatch(of: /user=h:([0-9a-f]{16})\b/)?.1)
        let requests = logs.lines.filter { $0.contains("rpc.caller=user h:") }
        XCTAssertFalse(
            requests.isEmpty, "the customer's calls are logged with a tag:\n\(logs.lines.joined(separator: "\n"))")
        XCTAssertTrue(requests.allSatisfy { $0.contains("user h:\(tag) (customer)") }, requests.joined(separator: "\n"))
        for line in logs.lines {
            XCTAssertFalse(line.contains(secret), "a log line names the user: \(line)")
        }
    }
}
