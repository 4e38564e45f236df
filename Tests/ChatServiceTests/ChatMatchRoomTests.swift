import Foundation
import GRDB
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService
@testable import ChatService

/// SLP's match rooms as AccountService's outbox opens and closes them: only AccountService may, each
/// delivery may repeat, and the room keeps the match's id and its two members.
final class ChatMatchRoomTests: XCTestCase {
    /// The repository's app files: ChatService serves SLP's members as deployed.
    private static let apps = ServiceHarness.repositoryApps

    var fixture: ChatFixture!

    override func setUp() async throws {
        fixture = try await ChatFixture.start(apps: Self.apps)
    }

    /// An SLP member's token (ChatService trusts the token; the account need not exist for these rules).
    private func slpMember(_ id: String) throws -> CallOptions {
        ServiceHarness.bearer(try fixture.harness.token(user: id, role: "member", app: "slp", now: fixture.clock.now))
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
        let afterClosing0 = try await fixture.store.events(recipientID: "slp-bo", afterPosition: 0, limit: 10)
        XCTAssertEqual(afterClosing0.count, 2, "each member hears of the closing once")
        XCTAssertEqual(
            afterClosing0.last?.body, .roomClosed(roomID: "m-1", closedAtMilliseconds: closed.closedAtMs))
        if case .roomClosed(let event)? = afterClosing0.last.map(ChatMessages.event)?.event {
            XCTAssertEqual(event.roomID, "m-1")
        } else {
            XCTFail("the stream does not say the room closed")
        }
        let afterClosing = try await fixture.asService("account") { try await $0.openMatchRoom(open) }
        XCTAssertFalse(afterClosing.created, "a late repeat of the opening does not reopen it")
        let stillClosed = try await fixture.store.room(id: "m-1")
        XCTAssertEqual(stillClosed?.isClosed, true)
        let unknown = await statusCode {
            _ = try await self.fixture.asService("account") { try await $0.closeMatchRoom(.init(matchID: "m-9")) }
        }
        XCTAssertEqual(unknown, .notFound)
    }

    func testSlpMembersChatInTheirMatchRoomInTextUntilTheMatchEnds() async throws {
        let ana = try slpMember("slp-ana")
        let bo = try slpMember("slp-bo")
        let outsider = try slpMember("slp-cy")
        let customer = try await fixture.signUp(.customer)
        _ = try await fixture.asService("account") {
            try await $0.openMatchRoom(.init(matchID: "m-1", memberA: "slp-ana", memberB: "slp-bo"))
        }
        let sent = try await fixture.chat.sendMessage(
            .init(roomID: "m-1", body: .text(.init(text: "안녕하세요, 3시에 봬요"))), options: ana)
        let history = try await fixture.chat.listMessages(.init(roomID: "m-1"), options: bo)
        XCTAssertEqual(history.messages.map(\.id), [sent.id])
        let rooms = try await fixture.chat.listRooms(.init(), options: bo)
        XCTAssertEqual(rooms.rooms.map(\.kind), [.slpMatch])
        XCTAssertEqual(rooms.rooms.first?.closed, false)
        let image = await statusCode {
            _ = try await self.fixture.chat.sendMessage(
                .init(roomID: "m-1", body: .image(.init(image: .init(id: "img-1")))), options: ana)
        }
        XCTAssertEqual(image, .invalidArgument, "a match room takes text only")
        let read = await statusCode {
            _ = try await self.fixture.chat.listMessages(.init(roomID: "m-1"), options: outsider)
        }
        XCTAssertEqual(read, .permissionDenied, "only the two members read the room")
        // Tenant: the room is SLP's (chat_room.app): a YeDi caller finds no such room, even one whose
        // token names a member's id, and YeDi's room list never shows it.
        let bosIDInYedi = ServiceHarness.bearer(
            try fixture.harness.token(user: "slp-bo", role: .customer, app: .yedi, now: fixture.clock.now))
        for yedi in [customer.options, bosIDInYedi] {
            let other = await statusCode {
                _ = try await self.fixture.chat.listMessages(.init(roomID: "m-1"), options: yedi)
            }
            XCTAssertEqual(other, .notFound, "another app's room is unknown")
        }
        let yediRooms = try await fixture.chat.listRooms(.init(), options: bosIDInYedi)
        XCTAssertTrue(yediRooms.rooms.isEmpty)

        _ = try await fixture.asService("account") { try await $0.closeMatchRoom(.init(matchID: "m-1")) }
        do {
            _ = try await fixture.chat.sendMessage(.init(roomID: "m-1", body: .text(.init(text: "잠깐만요"))), options: bo)
            XCTFail("a message went into an ended match's room")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .failedPrecondition)
            XCTAssertEqual(error.message, "room_id: the match has ended")
        }
        let kept = try await fixture.chat.listMessages(.init(roomID: "m-1"), options: bo)
        XCTAssertEqual(kept.messages.map(\.id), [sent.id], "the history stays readable")
        let closedRooms = try await fixture.chat.listRooms(.init(), options: ana)
        XCTAssertEqual(closedRooms.rooms.first?.closed, true)
    }

    /// A send to a match room before the outbox opened it: ChatService asks AccountService (GetMatch) and
    /// opens the room for an active match of the sender's; a stranger's or an ended match's id stays
    /// unknown (NOT_FOUND).
    func testSlpASendBeforeTheRoomWasOpenedAsksAccountServiceOnce() async throws {
        // Two active members and their match, written where AccountService keeps them.
        try await fixture.account.environment.database.write { db in
            for id in ["slp-ana", "slp-bo", "slp-cy"] {
                try db.execute(
                    sql: """
                        INSERT INTO user (id, role, app, name, phone, gender, created_at_ms, nickname)
                        VALUES (?, 'member', 'slp', '', '', 1, 0, ?)
                        """,
                    arguments: [id, id])
                try db.execute(
                    sql: """
                        INSERT INTO slp_profile (user_id, gender, birth_year, birth_month, birth_day, email,
                            partner_min_age, partner_max_age, reputation, created_at_ms)
                        VALUES (?, 1, 1998, 3, 4, '', 17, 100, '0,0,0,0,0,0,0,0,0', 0)
                        """,
                    arguments: [id])
            }
            try SQLiteSlpStore.match("slp-cy", "slp-ana", id: "m-8", now: 1, db, events: nil)
            try SQLiteSlpStore.end("m-8", by: "slp-cy", reason: "dodge", now: 2, db, events: nil)
            try SQLiteSlpStore.match("slp-ana", "slp-bo", id: "m-7", now: 3, db, events: nil)
        }
        let stranger = try slpMember("slp-cy")
        let unknown = await statusCode {
            _ = try await self.fixture.chat.sendMessage(
                .init(roomID: "m-7", body: .text(.init(text: "끼어들기"))), options: stranger)
        }
        XCTAssertEqual(unknown, .notFound, "not the stranger's match")
        let sent = try await fixture.chat.sendMessage(
            .init(roomID: "m-7", body: .text(.init(text: "먼저 도착했어요"))), options: try slpMember("slp-bo"))
        XCTAssertEqual(sent.roomID, "m-7")
        let room = try await fixture.store.room(id: "m-7")
        XCTAssertEqual(room?.members, ["slp-ana", "slp-bo"])
        XCTAssertEqual(room?.kind, RoomRecord.slpMatchKind)
        let late = try await fixture.asService("account") {
            try await $0.openMatchRoom(.init(matchID: "m-7", memberA: "slp-ana", memberB: "slp-bo"))
        }
        XCTAssertFalse(late.created, "the outbox's delivery finds the room")
        let ended = await statusCode {
            _ = try await self.fixture.chat.sendMessage(
                .init(roomID: "m-8", body: .text(.init(text: "안녕"))), options: stranger)
        }
        XCTAssertEqual(ended, .notFound, "an ended match's room is not opened")
    }
}
