import Foundation
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import ChatService

/// The handler rules: rooms, sending, history, read state, the room list and purge.
final class ChatRoomTests: XCTestCase {
    var fixture: ChatFixture!

    override func setUp() async throws {
        fixture = try await ChatFixture.start()
    }

    override func tearDown() async throws {
        try await fixture?.stop()
    }

    // MARK: Rooms

    func testFiftyConcurrentOpensOfOnePairReturnOneRoom() async throws {
        let fixture = try XCTUnwrap(fixture)
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let answers = try await withThrowingTaskGroup(of: YediChat.OpenRoomResponse.self) { group in
            for _ in 0..<50 { group.addTask { try await fixture.open(customer, designer) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(answers.count, 50)
        XCTAssertEqual(Set(answers.compactMap { $0.room?.id }).count, 1, "one pair got several rooms")
        XCTAssertEqual(answers.filter(\.created).count, 1, "exactly one call created the room")
        XCTAssertEqual(answers.first?.room?.other?.name, designer.name)
        let list = try await fixture.chat.listRooms(.init(), options: customer.options)
        XCTAssertEqual(list.rooms.count, 1)
        // A second customer gets another room with the same designer.
        let other = try await fixture.signUp(.customer)
        let second = try await fixture.open(other, designer)
        XCTAssertNotEqual(second.room?.id, answers.first?.room?.id)
    }

    func testConsultingFromAPostAddsOnePostShare() async throws {
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let stranger = try await fixture.signUp(.designer)
        fixture.peers.addPost("p-1", designer: designer.id, title: "레이어드컷 추천")
        fixture.peers.addPost("p-2", designer: stranger.id, title: "남의 글")
        let first = try await fixture.open(customer, designer, post: "p-1")
        guard case .postShare(let share)? = first.postShare?.body else {
            return XCTFail("no post share: \(first)")
        }
        XCTAssertEqual(share.postTitle, "레이어드컷 추천")
        XCTAssertEqual(share.firstPhoto?.id, "photo-p-1")
        XCTAssertEqual(share.text, "이 게시물 보고 상담하러 왔어요")
        XCTAssertEqual(first.postShare?.senderID, customer.id)
        XCTAssertEqual(first.room?.lastMessage?.id, first.postShare?.id)
        // Consulting again from the same post reuses room and message.
        let again = try await fixture.open(customer, designer, post: "p-1")
        XCTAssertEqual(again.room?.id, first.room?.id)
        XCTAssertFalse(again.created)
        XCTAssertEqual(again.postShare?.id, first.postShare?.id)
        let roomID = try XCTUnwrap(first.room?.id)
        let history = try await fixture.chat.listMessages(.init(roomID: roomID), options: designer.options)
        XCTAssertEqual(history.messages.count, 1)

        let wrongDesigner = await rpcError { _ = try await self.fixture.open(customer, designer, post: "p-2") }
        XCTAssertEqual(wrongDesigner?.code, .invalidArgument)
        let unknown = await rpcError { _ = try await self.fixture.open(customer, designer, post: "nope") }
        XCTAssertEqual(unknown?.code, .notFound)
    }

    func testOpeningNeedsACustomerAndAnExistingDesigner() async throws {
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let otherCustomer = try await fixture.signUp(.customer)
        let asDesigner = await statusCode {
            _ = try await self.fixture.chat.openRoom(.init(designerID: designer.id), options: designer.options)
        }
        XCTAssertEqual(asDesigner, .permissionDenied)
        let unknown = await statusCode {
            _ = try await self.fixture.chat.openRoom(.init(designerID: "nobody"), options: customer.options)
        }
        XCTAssertEqual(unknown, .notFound)
        let notADesigner = await statusCode {
            _ = try await self.fixture.chat.openRoom(.init(designerID: ""), options: customer.options)
        }
        XCTAssertEqual(notADesigner, .invalidArgument)
        let withSelf = await statusCode {
            _ = try await self.fixture.chat.openRoom(.init(designerID: customer.id), options: customer.options)
        }
        XCTAssertEqual(withSelf, .invalidArgument)
        let aCustomer = await statusCode {
            _ = try await self.fixture.chat.openRoom(.init(designerID: otherCustomer.id), options: customer.options)
        }
        XCTAssertEqual(aCustomer, .notFound, "a customer is not a designer to consult")
    }

    func testAClosedRoomRefusesSendsNamingTheRoomAndTheNextOpenMakesANewOne() async throws {
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        try await fixture.send(customer, room, "예약 문의드려요")
        _ = try await fixture.store.closeRoom(id: room, now: fixture.clock.nowMilliseconds)
        let refused = await rpcError { try await self.fixture.send(designer, room, "네 가능합니다") }
        XCTAssertEqual(refused?.code, .failedPrecondition)
        XCTAssertTrue(refused?.message.contains(room) == true, refused?.message ?? "")
        // Reads stay.
        let history = try await fixture.chat.listMessages(.init(roomID: room), options: designer.options)
        XCTAssertEqual(history.messages.count, 1)
        let mark = try await fixture.chat.markRead(.init(roomID: room), options: designer.options)
        XCTAssertTrue(mark.moved)
        // The pair's next consult is a new room, reused by later opens; both are in the list.
        let next = try await fixture.open(customer, designer)
        XCTAssertTrue(next.created)
        XCTAssertNotEqual(next.room?.id, room)
        let again = try await fixture.open(customer, designer)
        XCTAssertEqual(again.room?.id, next.room?.id)
        XCTAssertFalse(again.created)
        let list = try await fixture.chat.listRooms(.init(), options: customer.options)
        XCTAssertEqual(list.rooms.map(\.id), [next.room?.id ?? "", room])
    }

    // MARK: Membership

    func testOnlyMembersReadSendOrMarkRead() async throws {
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let stranger = try await fixture.signUp(.customer)
        let room = try await fixture.openRoomID(customer, designer)
        try await fixture.send(customer, room, "안녕하세요")
        let chat = fixture.chat
        let reading = await rpcError { _ = try await chat.listMessages(.init(roomID: room), options: stranger.options) }
        XCTAssertEqual(reading?.code, .permissionDenied)
        let sending = await rpcError { try await self.fixture.send(stranger, room, "끼어들기") }
        XCTAssertEqual(sending?.code, .permissionDenied)
        let marking = await statusCode { _ = try await chat.markRead(.init(roomID: room), options: stranger.options) }
        XCTAssertEqual(marking, .permissionDenied)
        let missing = await statusCode { try await self.fixture.send(customer, "no-such-room", "hi") }
        XCTAssertEqual(missing, .notFound)
        let anonymous = await statusCode {
            _ = try await chat.listMessages(.init(roomID: room), options: CallOptions(timeout: .seconds(5)))
        }
        XCTAssertEqual(anonymous, .unauthenticated)
        // The stranger's refused send left nothing behind.
        let history = try await chat.listMessages(.init(roomID: room), options: designer.options)
        XCTAssertEqual(history.messages.map(\.senderID), [customer.id])
    }

    // MARK: Bodies

    func testTextMustBeNonEmptyAndAtMostTwoThousandCharacters() async throws {
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        for blank in ["", "   ", "\n\t "] {
            let error = await rpcError { try await self.fixture.send(customer, room, blank) }
            XCTAssertEqual(error?.code, .invalidArgument, "\(blank.debugDescription) was accepted")
        }
        // 2,000 Korean characters (3 UTF-8 bytes each) pass; one more does not.
        let longest = String(repeating: "가", count: 2_000)
        let sent = try await fixture.send(customer, room, "  \(longest)\n")
        XCTAssertEqual(sent.body, .text(.init(text: longest)), "the text is stored trimmed")
        let tooLong = await rpcError { try await self.fixture.send(customer, room, longest + "나") }
        XCTAssertEqual(tooLong?.code, .invalidArgument)
        XCTAssertTrue(tooLong?.message.contains("2000") == true || tooLong?.message.contains("2,000") == true)
        let noBody = await statusCode {
            _ = try await self.fixture.chat.sendMessage(.init(roomID: room), options: customer.options)
        }
        XCTAssertEqual(noBody, .invalidArgument)
        let history = try await fixture.chat.listMessages(.init(roomID: room), options: customer.options)
        XCTAssertEqual(history.messages.count, 1)
    }

    /// One grapheme of 3.5 MB (combining marks) was once accepted as "1 character", and the room's
    /// history page then failed for both members. The decoder refuses it by its UTF-8 bytes.
    func testAOneGraphemeMultiMegabyteTextIsRefusedByItsBytesAndTheRoomStaysReadable() async throws {
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        let huge = "e" + String(repeating: "\u{301}", count: 1_750_000)
        XCTAssertEqual(huge.count, 1)
        let refused = await rpcError { try await self.fixture.send(customer, room, huge) }
        XCTAssertEqual(refused?.code, .invalidArgument)
        XCTAssertEqual(refused?.message, "text.text: at most 8000 bytes of UTF-8 (got 3500001)")
        _ = try await fixture.send(designer, room, "안녕하세요")
        let history = try await fixture.chat.listMessages(.init(roomID: room), options: designer.options)
        XCTAssertEqual(history.messages.map(\.body), [.text(.init(text: "안녕하세요"))])
    }

    func testAnImageMustExistInContentServiceAndBeTheSenders() async throws {
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        fixture.peers.addImage("img-mine", owner: customer.id)
        fixture.peers.addImage("img-theirs", owner: designer.id)
        func sendImage(_ id: String) async throws -> YediChat.ChatMessage {
            try await fixture.chat.sendMessage(
                .init(roomID: room, body: .image(.init(image: .init(id: id)))), options: customer.options)
        }
        let sent = try await sendImage("img-mine")
        XCTAssertEqual(
            sent.body,
            .image(
                .init(image: .init(id: "img-mine", url: "https://img.yedi.example/img-mine", width: 640, height: 480))))
        let unknown = await rpcError { _ = try await sendImage("img-unknown") }
        XCTAssertEqual(unknown?.code, .notFound)
        let theirs = await rpcError { _ = try await sendImage("img-theirs") }
        XCTAssertEqual(theirs?.code, .permissionDenied)
        // ContentService down: refused with UNAVAILABLE, nothing stored unchecked.
        fixture.peers.setDown(true)
        let down = await rpcError { _ = try await sendImage("img-mine") }
        XCTAssertEqual(down?.code, .unavailable)
        fixture.peers.setDown(false)
        // The URL was signed for a day: history shows the photo by the URL ContentService signs now.
        fixture.peers.resign("img-mine", url: "https://img.yedi.example/img-mine?e=2")
        let history = try await fixture.chat.listMessages(.init(roomID: room), options: customer.options)
        XCTAssertEqual(history.messages.count, 1)
        XCTAssertEqual(
            history.messages.first?.body,
            .image(
                .init(
                    image: .init(id: "img-mine", url: "https://img.yedi.example/img-mine?e=2", width: 640, height: 480)
                )))
    }

    func testAReservationMustBelongToTheRoomsPair() async throws {
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let otherCustomer = try await fixture.signUp(.customer)
        let room = try await fixture.openRoomID(customer, designer)
        fixture.peers.addReservation("r-ours", customer: customer.id, designer: designer.id, startAt: 1_800_000_000_000)
        fixture.peers.addReservation("r-other", customer: otherCustomer.id, designer: designer.id, startAt: 1)
        func send(_ id: String) async throws -> YediChat.ChatMessage {
            try await fixture.chat.sendMessage(
                .init(roomID: room, body: .reservation(.init(reservationID: id))), options: designer.options)
        }
        let sent = try await send("r-ours")
        XCTAssertEqual(sent.body, .reservation(.init(reservationID: "r-ours", startAtMs: 1_800_000_000_000)))
        let other = await statusCode { _ = try await send("r-other") }
        XCTAssertEqual(other, .permissionDenied)
        let unknown = await statusCode { _ = try await send("r-unknown") }
        XCTAssertEqual(unknown, .notFound)
        // A post share from the room's send path.
        fixture.peers.addPost("p-9", designer: designer.id, title: "펌 이벤트")
        let share = try await fixture.chat.sendMessage(
            .init(roomID: room, body: .postShare(.init(postID: "p-9", text: "이거요"))), options: customer.options)
        guard case .postShare(let body)? = share.body else { return XCTFail("\(share)") }
        XCTAssertEqual(body.postTitle, "펌 이벤트")
        XCTAssertEqual(body.text, "이거요")
    }

    // MARK: Idempotency and history

    func testARetriedSendReturnsTheOriginalMessage() async throws {
        let fixture = try XCTUnwrap(fixture)
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        let first = try await fixture.send(customer, room, "예약 가능할까요?", clientID: "c-1")
        let retried = try await withThrowingTaskGroup(of: YediChat.ChatMessage.self) { group in
            for _ in 0..<10 {
                group.addTask { try await fixture.send(customer, room, "예약 가능할까요?", clientID: "c-1") }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(Set(retried.map(\.id)), [first.id])
        XCTAssertEqual(Set(retried.map(\.seq)), [1])
        // The same key from the other member is their own message.
        let theirs = try await fixture.send(designer, room, "네 가능해요", clientID: "c-1")
        XCTAssertNotEqual(theirs.id, first.id)
        XCTAssertEqual(theirs.seq, 2)
        let history = try await fixture.chat.listMessages(.init(roomID: room), options: customer.options)
        XCTAssertEqual(history.messages.map(\.seq), [2, 1])
    }

    func testPagingAThousandMessagesByThirteenUpwardSeesEachOnce() async throws {
        let fixture = try XCTUnwrap(fixture)
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for sender in 0..<4 {
                group.addTask {
                    for index in 0..<250 {
                        try await fixture.send(
                            sender % 2 == 0 ? customer : designer, room, "message \(sender)-\(index)")
                    }
                }
            }
            try await group.waitForAll()
        }
        var seen: [Int64] = []
        var before: Int64 = 0
        var pages = 0
        while true {
            let page = try await fixture.chat.listMessages(
                .init(roomID: room, beforeSeq: before), options: customer.options)
            pages += 1
            XCTAssertLessThanOrEqual(page.messages.count, 13)
            XCTAssertEqual(page.messages.map(\.seq), page.messages.map(\.seq).sorted(by: >), "not newest first")
            seen += page.messages.map(\.seq)
            guard page.hasMore else { break }
            before = try XCTUnwrap(page.messages.last?.seq)
        }
        XCTAssertEqual(pages, 77)  // ceil(1000 / 13)
        XCTAssertEqual(seen.count, 1_000)
        XCTAssertEqual(Set(seen).count, 1_000)
        XCTAssertEqual(seen, Array((1...1_000).reversed()))
        // Catch-up: everything after 990, oldest first.
        let after = try await fixture.chat.listMessages(.init(roomID: room, afterSeq: 990), options: designer.options)
        XCTAssertEqual(after.messages.map(\.seq), Array(991...1_000))
        XCTAssertFalse(after.hasMore)
        let capped = try await fixture.chat.listMessages(.init(roomID: room, limit: 500), options: designer.options)
        XCTAssertEqual(capped.messages.count, 100)
        let both = await statusCode {
            _ = try await self.fixture.chat.listMessages(
                .init(roomID: room, beforeSeq: 5, afterSeq: 2), options: designer.options)
        }
        XCTAssertEqual(both, .invalidArgument)
    }

    // MARK: Read state

    func testUnreadCountsOnBothSidesAfterMarkRead() async throws {
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let designer2 = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        let room2 = try await fixture.openRoomID(customer, designer2)
        for index in 1...3 { try await fixture.send(customer, room, "c\(index)") }
        for index in 1...5 { try await fixture.send(designer, room, "d\(index)") }
        for index in 1...2 { try await fixture.send(designer2, room2, "e\(index)") }
        let chat = fixture.chat

        var customerList = try await chat.listRooms(.init(), options: customer.options)
        XCTAssertEqual(customerList.totalUnread, 7)
        XCTAssertEqual(customerList.rooms.first { $0.id == room }?.unreadCount, 5)
        var designerList = try await chat.listRooms(.init(), options: designer.options)
        XCTAssertEqual(designerList.totalUnread, 3)

        // The customer reads up to seq 6 (c1-c3, d1-d3): two of the designer's messages stay unread.
        let marked = try await chat.markRead(.init(roomID: room, upToSeq: 6), options: customer.options)
        XCTAssertEqual(marked.readSeq, 6)
        XCTAssertTrue(marked.moved)
        XCTAssertEqual(marked.unreadCount, 2)
        XCTAssertEqual(marked.totalUnread, 4)
        customerList = try await chat.listRooms(.init(), options: customer.options)
        XCTAssertEqual(customerList.rooms.first { $0.id == room }?.unreadCount, 2)
        XCTAssertEqual(customerList.totalUnread, 4)
        // The designer's side did not change; their messages up to 6 now show as read.
        designerList = try await chat.listRooms(.init(), options: designer.options)
        XCTAssertEqual(designerList.totalUnread, 3)
        let history = try await chat.listMessages(.init(roomID: room), options: designer.options)
        let flags = Dictionary(uniqueKeysWithValues: history.messages.map { ($0.seq, $0.readByRecipient) })
        XCTAssertEqual(flags[4], true)
        XCTAssertEqual(flags[6], true)
        XCTAssertEqual(flags[7], false)
        XCTAssertEqual(flags[1], false, "the designer has not read the customer's messages")
        XCTAssertEqual(history.otherReadSeq, 6)

        // The designer reads everything (0 = to the end).
        let designerMark = try await chat.markRead(.init(roomID: room), options: designer.options)
        XCTAssertEqual(designerMark.readSeq, 8)
        XCTAssertEqual(designerMark.totalUnread, 0)
        designerList = try await chat.listRooms(.init(), options: designer.options)
        XCTAssertEqual(designerList.totalUnread, 0)
        customerList = try await chat.listRooms(.init(), options: customer.options)
        XCTAssertEqual(customerList.totalUnread, 4, "the designer's read changed the customer's count")
    }

    func testAReadCursorSentBackwardsChangesNothing() async throws {
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        for index in 1...5 { try await fixture.send(designer, room, "d\(index)") }
        let chat = fixture.chat
        let forward = try await chat.markRead(.init(roomID: room, upToSeq: 4), options: customer.options)
        XCTAssertEqual(forward.readSeq, 4)
        let backward = try await chat.markRead(.init(roomID: room, upToSeq: 2), options: customer.options)
        XCTAssertEqual(backward.readSeq, 4)
        XCTAssertFalse(backward.moved)
        XCTAssertEqual(backward.unreadCount, 1)
        let same = try await chat.markRead(.init(roomID: room, upToSeq: 4), options: customer.options)
        XCTAssertFalse(same.moved)
        // Past the end is capped to the last message.
        let past = try await chat.markRead(.init(roomID: room, upToSeq: 99), options: customer.options)
        XCTAssertEqual(past.readSeq, 5)
        let negative = await statusCode {
            _ = try await chat.markRead(.init(roomID: room, upToSeq: -1), options: customer.options)
        }
        XCTAssertEqual(negative, .invalidArgument)
        let history = try await chat.listMessages(.init(roomID: room), options: customer.options)
        XCTAssertEqual(history.myReadSeq, 5)
    }

    func testCachedPagesNeverShowAStaleReadFlagOrMissAMessage() async throws {
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        for index in 1...3 { try await fixture.send(customer, room, "c\(index)") }
        let chat = fixture.chat
        let before = try await chat.listMessages(.init(roomID: room), options: customer.options)
        let warm = try await chat.listMessages(.init(roomID: room), options: customer.options)
        XCTAssertEqual(before, warm)
        XCTAssertEqual(before.messages.map(\.readByRecipient), [false, false, false])
        _ = try await chat.markRead(.init(roomID: room), options: designer.options)
        let after = try await chat.listMessages(.init(roomID: room), options: customer.options)
        XCTAssertEqual(after.messages.map(\.readByRecipient), [true, true, true])
        try await fixture.send(designer, room, "d1")
        let withNew = try await chat.listMessages(.init(roomID: room), options: customer.options)
        XCTAssertEqual(withNew.messages.map(\.seq), [4, 3, 2, 1])
    }

    // MARK: Room list

    func testTheRoomListIsOrderedByLastMessageWithNamesAndPreviews() async throws {
        let customer = try await fixture.signUp(.customer)
        var designers: [ChatFixture.User] = []
        var rooms: [String] = []
        for index in 0..<5 {
            let designer = try await fixture.signUp(.designer, name: "디자이너 \(index)")
            designers.append(designer)
            rooms.append(try await fixture.openRoomID(customer, designer))
        }
        // Activity order: room 2, then 0, then 4 (newest last).
        try await fixture.send(designers[2], rooms[2], "첫 번째")
        try await fixture.send(customer, rooms[0], "두 번째")
        try await fixture.send(designers[4], rooms[4], "세 번째")
        let chat = fixture.chat
        let first = try await chat.listRooms(.init(page: .init(limit: 2)), options: customer.options)
        XCTAssertEqual(first.rooms.map(\.id), [rooms[4], rooms[0]])
        XCTAssertEqual(first.rooms.first?.other?.name, "디자이너 4")
        XCTAssertEqual(first.rooms.first?.lastMessage?.body, .text(.init(text: "세 번째")))
        XCTAssertEqual(first.rooms.first?.unreadCount, 1)
        XCTAssertEqual(first.totalUnread, 2)
        XCTAssertGreaterThan(first.streamPosition, 0)
        let second = try await chat.listRooms(
            .init(page: .init(cursor: first.page?.nextCursor ?? "", limit: 2)), options: customer.options)
        XCTAssertEqual(second.rooms.map(\.id), [rooms[2], rooms[3]])
        let third = try await chat.listRooms(
            .init(page: .init(cursor: second.page?.nextCursor ?? "", limit: 2)), options: customer.options)
        XCTAssertEqual(third.rooms.map(\.id), [rooms[1]])
        XCTAssertEqual(third.page?.nextCursor ?? "", "")
        let bad = await statusCode {
            _ = try await chat.listRooms(.init(page: .init(cursor: "garbage")), options: customer.options)
        }
        XCTAssertEqual(bad, .invalidArgument)
        // The designer sees the customer's name.
        let designerView = try await chat.listRooms(.init(), options: designers[0].options)
        XCTAssertEqual(designerView.rooms.first?.other?.userID, customer.id)
        XCTAssertEqual(designerView.rooms.first?.other?.name, customer.name)
    }

    /// Names are cached (the clock never moves here), and AccountService's `UserChanged` (its outbox
    /// delivers it; this fixture's AccountService has no address for this ChatService, so the test sends
    /// it as "account") makes the room list show the new name at once.
    func testUserDirectoryShowsARenamedMemberOnceAccountServiceSaysTheyChanged() async throws {
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer, name: "박지호")
        _ = try await fixture.openRoomID(customer, designer)
        let before = try await fixture.chat.listRooms(.init(), options: customer.options)
        XCTAssertEqual(before.rooms.first?.other?.name, "박지호")

        try await withRPCClient(
            configuration: fixture.harness.clientConfiguration(port: try await fixture.account.port)
        ) { client in
            _ = try await YediAccount.AccountService.Client(client).updateProfile(
                .init(fields: ["name"], name: "박지호 원장"), options: designer.options)
        }
        let cached = try await fixture.chat.listRooms(.init(), options: customer.options)
        XCTAssertEqual(cached.rooms.first?.other?.name, "박지호", "cached until told")

        try await withRPCClient(
            configuration: fixture.harness.clientConfiguration(
                port: try await fixture.service.port, identity: "account")
        ) { client in
            _ = try await YediRuntime.Users.Client(client).userChanged(.init(userID: designer.id))
        }
        let renamed = try await fixture.chat.listRooms(.init(), options: customer.options)
        XCTAssertEqual(renamed.rooms.first?.other?.name, "박지호 원장")
    }

    // MARK: Purge

    func testPurgeUserRemovesTheirRoomsOnBothSidesAndIsIdempotent() async throws {
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let other = try await fixture.signUp(.customer)
        let room = try await fixture.openRoomID(customer, designer)
        let kept = try await fixture.openRoomID(other, designer)
        try await fixture.send(customer, room, "지워질 메시지")
        try await fixture.send(other, kept, "남을 메시지")
        _ = try await fixture.chat.listMessages(.init(roomID: room), options: designer.options)  // cached
        let stream = StreamCollector()
        let reader = Task { [fixture] in await stream.run(fixture!.chat, user: customer) }
        let caughtUp = try await eventually(timeout: 10) { stream.caughtUp }
        XCTAssertTrue(caughtUp)

        let asUser = await statusCode {
            _ = try await self.fixture.chat.purgeUser(.init(userID: customer.id), options: customer.options)
        }
        XCTAssertNotEqual(asUser, .ok)
        for _ in 0..<2 {
            _ = try await fixture.asService("account") { try await $0.purgeUser(.init(userID: customer.id)) }
        }
        await reader.value
        XCTAssertEqual(stream.end?.code, .unauthenticated, "the deleted user's stream stayed open")
        let designerRooms = try await fixture.chat.listRooms(.init(), options: designer.options)
        XCTAssertEqual(designerRooms.rooms.map(\.id), [kept])
        let gone = await statusCode {
            _ = try await self.fixture.chat.listMessages(.init(roomID: room), options: designer.options)
        }
        XCTAssertEqual(gone, .notFound)
        let events = try await fixture.store.events(recipientID: designer.id, afterPosition: 0, limit: 100)
        XCTAssertFalse(
            events.contains { event in
                if case .messageAdded(let message) = event.body { return message.roomID == room }
                if case .roomCreated(let created) = event.body { return created.id == room }
                return false
            })
        let customerEvents = try await fixture.store.events(recipientID: customer.id, afterPosition: 0, limit: 100)
        XCTAssertEqual(customerEvents, [])
        let keptHistory = try await fixture.chat.listMessages(.init(roomID: kept), options: other.options)
        XCTAssertEqual(keptHistory.messages.count, 1)
    }
}
