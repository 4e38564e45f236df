import ServiceRuntime
import XCTest

@testable import ChatService

/// What every `ChatStore` must do with rooms beyond one customer–designer pair for ever: several rooms
/// of a pair over time (one open at a time), closed rooms, and rooms of any kind with their own members.
extension ChatStoreContract {
    static func aPairHasSeveralRoomsOverTimeOneOpenAtATime(_ make: Factory) async throws {
        let store = try make({ _ in })
        _ = try await consultRoom(store)
        _ = try await store.appendMessage(draft("m1", room: "r1", from: "c1", text: "first consult"))
        let closed = try await store.closeRoom(id: "r1", now: 50)
        XCTAssertEqual(closed.closedAtMilliseconds, 50)
        let again = try await store.closeRoom(id: "r1", now: 60)
        XCTAssertEqual(again.closedAtMilliseconds, 50, "closing twice moved the closing time")
        // The pair's next consult is a new room; opening again returns that one, concurrently too.
        let opened = try await openConcurrently(store, times: 10, newRoomIDs: "r2", now: 100)
        XCTAssertEqual(Set(opened.map(\.room.id)).count, 1, "two open rooms for one pair")
        XCTAssertEqual(opened.filter(\.created).count, 1)
        let second = opened[0].room
        XCTAssertNotEqual(second.id, "r1")
        XCTAssertNil(second.closedAtMilliseconds)
        XCTAssertEqual(second.customerID, "c1")
        XCTAssertEqual(second.designerID, "d1")
        // Both stay in the members' lists, the old one with its history.
        let list = try await store.rooms(userID: "d1", app: .yedi, afterActivity: nil, limit: 10)
        XCTAssertEqual(list.rooms.map(\.room.id), [second.id, "r1"])
        XCTAssertEqual(list.rooms.last?.room.closedAtMilliseconds, 50)
        let history = try await store.messages(roomID: "r1", beforeSeq: nil, limit: 10)
        XCTAssertEqual(history.messages.map(\.id), ["m1"])
        // Closing the second lets a third open.
        _ = try await store.closeRoom(id: second.id, now: 200)
        let third = try await store.openRoom(
            kind: "consult", customerID: "c1", designerID: "d1", newRoomID: "r3", now: 300, postShare: nil)
        XCTAssertEqual(third.room.id, "r3")
        XCTAssertTrue(third.created)
    }

    static func aClosedRoomKeepsItsHistoryAndRefusesSends(_ make: Factory) async throws {
        let sink = Sink()
        let store = try make(sink.sink)
        let room = try await consultRoom(store)
        let sent = try await store.appendMessage(draft("m1", room: room.id, from: "d1", text: "hi", clientID: "k"))
        _ = try await store.closeRoom(id: room.id, now: 10)
        let eventsBefore = sink.events.count
        await expect(.roomClosed, "a closed room took a message") {
            _ = try await store.appendMessage(draft("m2", room: room.id, from: "c1", text: "too late"))
        }
        // A retry of what was sent before the close still gets its original.
        let retry = try await store.appendMessage(draft("m3", room: room.id, from: "d1", text: "hi", clientID: "k"))
        XCTAssertTrue(retry.duplicate)
        XCTAssertEqual(retry.message, sent.message)
        XCTAssertEqual(sink.events.count, eventsBefore, "a refused send published events")
        // Reads stay: history, unread counts, the read cursor.
        let page = try await store.messages(roomID: room.id, beforeSeq: nil, limit: 10)
        XCTAssertEqual(page.messages.map(\.id), ["m1"])
        let unread = try await store.unreadCount(roomID: room.id, userID: "c1")
        XCTAssertEqual(unread, 1)
        let mark = try await store.markRead(roomID: room.id, userID: "c1", upToSeq: 0, now: 11)
        XCTAssertEqual(mark, ReadMark(readSeq: 1, moved: true))
        let loaded = try await store.room(id: room.id)
        XCTAssertEqual(loaded?.isClosed, true)
        await expect(.roomNotFound, "closed a missing room") {
            _ = try await store.closeRoom(id: "missing", now: 12)
        }
    }

    static func aCreatedRoomServesItsMembersOnly(_ make: Factory) async throws {
        let sink = Sink()
        let store = try make(sink.sink)
        let members = ["m-a", "m-b", "m-c"].map { RoomMemberRecord(userID: $0, role: RoomRole.member) }
        let room = try await store.createRoom(id: "g1", kind: "slp.study", members: members, now: 5)
        XCTAssertEqual(room.kind, "slp.study")
        XCTAssertEqual(room.memberships, members)
        XCTAssertEqual(room.customerID, "", "a room without a customer names none")
        XCTAssertEqual(sink.events.map(\.recipientID), ["m-a", "m-b", "m-c"], "one room-created event per member")
        let loaded = try await store.room(id: "g1")
        XCTAssertEqual(loaded, room)
        // Any member sends and every member hears it; nobody else does either.
        _ = try await store.appendMessage(draft("x1", room: "g1", from: "m-c", text: "hello all"))
        XCTAssertEqual(sink.events.suffix(3).map(\.recipientID), ["m-a", "m-b", "m-c"])
        await expect(.notMember, "a stranger sent") {
            _ = try await store.appendMessage(draft("x2", room: "g1", from: "stranger", text: "let me in"))
        }
        let strangerUnread = try await store.unreadCount(roomID: "g1", userID: "stranger")
        XCTAssertNil(strangerUnread)
        let strangerRooms = try await store.rooms(userID: "stranger", app: .yedi, afterActivity: nil, limit: 10)
        XCTAssertEqual(strangerRooms.rooms, [])
        let strangerEvents = try await store.events(recipientID: "stranger", afterPosition: 0, limit: 10)
        XCTAssertEqual(strangerEvents, [])
        // A member's list shows the room once, whatever the number of members.
        _ = try await store.markRead(roomID: "g1", userID: "m-b", upToSeq: 1, now: 6)
        let list = try await store.rooms(userID: "m-a", app: .yedi, afterActivity: nil, limit: 10)
        XCTAssertEqual(list.rooms.map(\.room.id), ["g1"])
        XCTAssertEqual(list.rooms.first?.unreadCount, 1)
        XCTAssertEqual(list.rooms.first?.otherReadSeq, 1, "the furthest another member read")
        let replay = try await store.events(recipientID: "m-b", afterPosition: 0, limit: 10)
        XCTAssertEqual(replay, sink.events.filter { $0.recipientID == "m-b" }, "replay differs from live delivery")
    }
}
