import Foundation
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import ChatService

/// SLP's match rooms as AccountService's outbox opens and closes them: only AccountService may, each
/// delivery may repeat, and the room keeps the match's id and its two members.
final class ChatMatchRoomTests: XCTestCase {
    var fixture: ChatFixture!

    override func setUp() async throws {
        fixture = try await ChatFixture.start()
    }

    override func tearDown() async throws {
        try await fixture?.stop()
    }

    func testSlpMatchRoomsOpenOnceUnderTheMatchIDAndCloseForGood() async throws {
        let open = YediChat.OpenMatchRoomRequest(matchID: "m-1", memberA: "slp-ana", memberB: "slp-bo")
        let customer = try await fixture.signUp(.customer)
        let asUser = await statusCode { _ = try await self.fixture.chat.openMatchRoom(open, options: customer.options) }
        XCTAssertEqual(asUser, .permissionDenied)
        let asContent = await statusCode {
            _ = try await self.fixture.asService("content") { try await $0.openMatchRoom(open) }
        }
        XCTAssertEqual(asContent, .permissionDenied)

        let first = try await fixture.asService("account") { try await $0.openMatchRoom(open) }
        XCTAssertTrue(first.created)
        let again = try await fixture.asService("account") { try await $0.openMatchRoom(open) }
        XCTAssertFalse(again.created, "a repeated delivery finds its room")
        let stored = try await fixture.store.room(id: "m-1")
        let room = try XCTUnwrap(stored)
        XCTAssertEqual(room.kind, RoomRecord.slpMatchKind)
        XCTAssertEqual(room.members, ["slp-ana", "slp-bo"])
        XCTAssertFalse(room.isClosed)
        XCTAssertEqual(ChatMessages.kind(room.kind), .slpMatch)
        let told = try await fixture.store.events(recipientID: "slp-bo", afterPosition: 0, limit: 10)
        XCTAssertEqual(told.count, 1, "each member hears of the room once")

        let same = await statusCode {
            _ = try await self.fixture.asService("account") {
                try await $0.openMatchRoom(.init(matchID: "m-2", memberA: "slp-ana", memberB: "slp-ana"))
            }
        }
        XCTAssertEqual(same, .invalidArgument)

        let closed = try await fixture.asService("account") { try await $0.closeMatchRoom(.init(matchID: "m-1")) }
        XCTAssertGreaterThan(closed.closedAtMs, 0)
        let closedAgain = try await fixture.asService("account") { try await $0.closeMatchRoom(.init(matchID: "m-1")) }
        XCTAssertEqual(closedAgain.closedAtMs, closed.closedAtMs, "the first closing stays")
        let afterClosing = try await fixture.asService("account") { try await $0.openMatchRoom(open) }
        XCTAssertFalse(afterClosing.created, "a late repeat of the opening does not reopen it")
        let stillClosed = try await fixture.store.room(id: "m-1")
        XCTAssertEqual(stillClosed?.isClosed, true)
        let unknown = await statusCode {
            _ = try await self.fixture.asService("account") { try await $0.closeMatchRoom(.init(matchID: "m-9")) }
        }
        XCTAssertEqual(unknown, .notFound)
    }
}
