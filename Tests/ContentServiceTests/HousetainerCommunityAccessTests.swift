import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

/// Every `Community` method, with an empty request, for every kind of caller of the real ContentService:
/// a real status each time (never UNIMPLEMENTED, UNKNOWN or INTERNAL), and other apps' callers refused;
/// then `PurgeUser` removing a member's community data.
final class HousetainerCommunityAccessTests: HousetainerCommunityTestCase {
    func testHousetainerEveryCommunityMethodAnswersARealStatusToEveryCaller() async throws {
        let service = try XCTUnwrap(YediProtoCatalog.services.first { $0.fullName == "yedi.housetainer.Community" })
        let callers: [(String, CallOptions, refused: Bool)] = [
            ("member", try member("ht-member"), false), ("admin", try admin, false),
            ("anonymous", CallOptions(timeout: .seconds(10), metadata: ["yedi-app": "housetainer"]), false),
            ("yedi", try member("yedi-customer", app: .yedi, role: .customer), true),
            ("slp", try member("slp-member", app: "slp"), true),
            ("zipadoo", try member("zipadoo-member", app: "zipadoo"), true),
        ]
        // A service certificate (AccountService's) calls SERVICE methods only.
        let serviceClient = try RPCClient(
            configuration: fixture.harness.clientConfiguration(
                port: try await fixture.content.port, identity: "account"))
        let run = Task { await serviceClient.run() }
        let clients =
            callers.map { ($0.0, fixture.contentClient, $0.1, $0.refused) } + [
                ("service", serviceClient, CallOptions(timeout: .seconds(10)), true)
            ]
        for method in service.methods {
            for (name, client, options, refused) in clients {
                var got = StatusCode.ok
                do {
                    _ = try await client.unary(method, payload: [], options: options)
                } catch let error as RPCError {
                    got = error.code
                }
                XCTAssertFalse([.unimplemented, .unknown, .internalError].contains(got), "\(method.fullName) \(name)")
                if refused { XCTAssertEqual(got, .permissionDenied, "\(method.fullName) by \(name)") }
            }
        }
        serviceClient.beginGracefulShutdown()
        await run.value
    }

    func testHousetainerPurgeUserRemovesTheirEventsCommentsBookmarksNotificationsAndBlocks() async throws {
        try await enroll("kept")
        let gone = try member("gone")
        let kept = try member("kept")
        let theirs = try await displayedEvent(gone)
        let mine = try await displayedEvent(kept)
        _ = try await community.bookmark(.init(eventID: theirs.id), options: kept)
        _ = try await community.bookmark(.init(eventID: mine.id), options: gone)
        _ = try await comment(mine.id, "안녕", by: gone)
        _ = try await community.block(.init(memberID: "kept"), options: gone)
        _ = try await fixture.asService("account") { content in try await content.purgeUser(.init(userID: "gone")) }
        let events = try await community.listEvents(.init(period: .ongoing), options: kept)
        XCTAssertEqual(events.events.map(\.id), [mine.id])
        XCTAssertEqual(events.events.first?.commentCount, 0)
        XCTAssertEqual(events.events.first?.bookmarked, false)
        let noNotifications = try await notifications(kept).notifications.isEmpty
        XCTAssertTrue(noNotifications)
        let noEvents = try await community.listMyBookmarks(.init(), options: kept).events.isEmpty
        XCTAssertTrue(noEvents)
    }
}
