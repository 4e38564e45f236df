import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
import RPCCore
import ServiceRuntime
import XCTest

@testable import ChatService

/// What every `ChatStore` must do, written against the protocol only. A store is made by a factory
/// that takes the event sink, so a second engine (PostgreSQL) gets a test class like
/// `SQLiteChatStoreTests` that hands its own factory to these same checks.
enum ChatStoreContract {
    typealias Factory = (@escaping ChatEventSink) throws -> any ChatStore

    /// Collects what the store's sink receives.
    final class Sink: Sendable {
        private let box = NIOLockedValueBox<[ChatEventRecord]>([])
        var events: [ChatEventRecord] { box.withLockedValue { $0 } }
        var sink: ChatEventSink { { events in self.box.withLockedValue { $0 += events } } }
    }

    static func draft(_ id: String, room: String, from sender: String, text: String, clientID: String? = nil)
        -> MessageDraft
    {
        MessageDraft(
            id: id, roomID: room, senderID: sender, sentAtMilliseconds: 1_000, clientMessageID: clientID,
            body: .text(text))
    }

    /// The consult room "r1" of c1 and d1, opened at 1.
    static func consultRoom(_ store: any ChatStore) async throws -> RoomRecord {
        try await store.openRoom(
            kind: "consult", customerID: "c1", designerID: "d1", newRoomID: "r1", now: 1, postShare: nil
        ).room
    }

    /// Fails unless `body` throws `expected`.
    static func expect(
        _ expected: ChatStoreError, _ failure: String, file: StaticString = #filePath, line: UInt = #line,
        _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            XCTFail(failure, file: file, line: line)
        } catch {
            XCTAssertEqual(error as? ChatStoreError, expected, file: file, line: line)
        }
    }

    /// `times` concurrent consult opens of c1 and d1, each offering its own new room id.
    static func openConcurrently(_ store: any ChatStore, times: Int, newRoomIDs prefix: String, now: Int64)
        async throws -> [OpenedRoom]
    {
        try await withThrowingTaskGroup(of: OpenedRoom.self) { group in
            for index in 0..<times {
                group.addTask {
                    try await store.openRoom(
                        kind: "consult", customerID: "c1", designerID: "d1", newRoomID: "\(prefix)-\(index)",
                        now: now, postShare: nil)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    static func roomsAreUniquePerPairEvenConcurrently(_ make: Factory) async throws {
        let sink = Sink()
        let store = try make(sink.sink)
        let opened = try await openConcurrently(store, times: 20, newRoomIDs: "room", now: 5)
        XCTAssertEqual(Set(opened.map(\.room.id)).count, 1)
        XCTAssertEqual(opened.filter(\.created).count, 1)
        let room = opened[0].room
        XCTAssertEqual(room.members, ["c1", "d1"])
        // Another kind for the same pair is another room (other pairs later).
        let other = try await store.openRoom(
            kind: "match", customerID: "c1", designerID: "d1", newRoomID: "room-x", now: 6, postShare: nil)
        XCTAssertNotEqual(other.room.id, room.id)
        // Room-created events: one per member per room, after commit.
        XCTAssertEqual(sink.events.count, 4)
        let loaded = try await store.room(id: room.id)
        XCTAssertEqual(loaded, room)
    }

    static func messagesGetIncreasingSeqsAndClientIDsDeduplicate(_ make: Factory) async throws {
        let sink = Sink()
        let store = try make(sink.sink)
        let room = try await store.openRoom(
            kind: "consult", customerID: "c1", designerID: "d1", newRoomID: "r1", now: 1, postShare: nil
        ).room
        let first = try await store.appendMessage(draft("m1", room: room.id, from: "c1", text: "a", clientID: "k"))
        XCTAssertEqual(first.message.seq, 1)
        XCTAssertFalse(first.duplicate)
        let again = try await store.appendMessage(draft("m2", room: room.id, from: "c1", text: "a", clientID: "k"))
        XCTAssertTrue(again.duplicate)
        XCTAssertEqual(again.message, first.message)
        let second = try await store.appendMessage(draft("m3", room: room.id, from: "d1", text: "b", clientID: "k"))
        XCTAssertEqual(second.message.seq, 2)
        do {
            _ = try await store.appendMessage(draft("m4", room: room.id, from: "stranger", text: "c"))
            XCTFail("a stranger appended")
        } catch let error as ChatStoreError {
            XCTAssertEqual(error, .notMember)
        }
        do {
            _ = try await store.appendMessage(draft("m5", room: "missing", from: "c1", text: "c"))
            XCTFail("appended to a missing room")
        } catch let error as ChatStoreError {
            XCTAssertEqual(error, .roomNotFound)
        }
        let bodies: [MessageBodyRecord] = [
            .image(ImageRecord(id: "i", url: "u", width: 1, height: 2)),
            .postShare(
                postID: "p", title: "t", firstPhoto: ImageRecord(id: "f", url: "v", width: 3, height: 4), text: "n"),
            .postShare(postID: "p2", title: "t2", firstPhoto: nil, text: ""),
            .reservation(id: "r", startAtMilliseconds: 77),
        ]
        for (index, body) in bodies.enumerated() {
            var message = draft("b\(index)", room: room.id, from: "c1", text: "")
            message.body = body
            _ = try await store.appendMessage(message)
        }
        let page = try await store.messages(roomID: room.id, beforeSeq: nil, limit: 10)
        XCTAssertEqual(page.messages.map(\.seq), [6, 5, 4, 3, 2, 1])
        XCTAssertEqual(page.messages.prefix(4).reversed().map(\.body), bodies)
        XCTAssertFalse(page.hasMore)
        let older = try await store.messages(roomID: room.id, beforeSeq: 3, limit: 1)
        XCTAssertEqual(older.messages.map(\.seq), [2])
        XCTAssertTrue(older.hasMore)
        let newer = try await store.messages(roomID: room.id, afterSeq: 4, limit: 10)
        XCTAssertEqual(newer.messages.map(\.seq), [5, 6])
        // Events: 2 room-created, then 2 per new message (the duplicate added none), positions increasing.
        let positions = sink.events.map(\.position)
        XCTAssertEqual(sink.events.count, 2 + 2 * 6)
        XCTAssertEqual(positions, positions.sorted())
    }

    static func readCursorsNeverMoveBackAndCountUnread(_ make: Factory) async throws {
        let store = try make({ _ in })
        let room = try await store.openRoom(
            kind: "consult", customerID: "c1", designerID: "d1", newRoomID: "r1", now: 1, postShare: nil
        ).room
        for index in 0..<4 {
            _ = try await store.appendMessage(draft("d\(index)", room: room.id, from: "d1", text: "x"))
        }
        _ = try await store.appendMessage(draft("c0", room: room.id, from: "c1", text: "y"))
        var unread = try await store.unreadCount(roomID: room.id, userID: "c1")
        XCTAssertEqual(unread, 4)
        unread = try await store.unreadCount(roomID: room.id, userID: "d1")
        XCTAssertEqual(unread, 1)
        let mark = try await store.markRead(roomID: room.id, userID: "c1", upToSeq: 3, now: 9)
        XCTAssertEqual(mark, ReadMark(readSeq: 3, moved: true))
        let back = try await store.markRead(roomID: room.id, userID: "c1", upToSeq: 1, now: 9)
        XCTAssertEqual(back, ReadMark(readSeq: 3, moved: false))
        unread = try await store.unreadCount(roomID: room.id, userID: "c1")
        XCTAssertEqual(unread, 1)
        let total = try await store.totalUnread(userID: "c1")
        XCTAssertEqual(total, 1)
        let toEnd = try await store.markRead(roomID: room.id, userID: "c1", upToSeq: 0, now: 9)
        XCTAssertEqual(toEnd.readSeq, 5)
        let page = try await store.messages(roomID: room.id, beforeSeq: nil, limit: 13)
        XCTAssertEqual(page.readSeqs, ["c1": 5, "d1": 0])
        let stranger = try await store.unreadCount(roomID: room.id, userID: "stranger")
        XCTAssertNil(stranger)
        do {
            _ = try await store.markRead(roomID: room.id, userID: "stranger", upToSeq: 1, now: 9)
            XCTFail("a stranger moved a cursor")
        } catch let error as ChatStoreError {
            XCTAssertEqual(error, .notMember)
        }
    }

    static func eventsReplayInOrderForTheirRecipientOnly(_ make: Factory) async throws {
        let sink = Sink()
        let store = try make(sink.sink)
        let r1 = try await store.openRoom(
            kind: "consult", customerID: "c1", designerID: "d1", newRoomID: "r1", now: 1, postShare: nil
        ).room
        let r2 = try await store.openRoom(
            kind: "consult", customerID: "c2", designerID: "d1", newRoomID: "r2", now: 1, postShare: nil
        ).room
        _ = try await store.appendMessage(draft("m1", room: r1.id, from: "c1", text: "hi"))
        _ = try await store.appendMessage(draft("m2", room: r2.id, from: "c2", text: "hey"))
        _ = try await store.markRead(roomID: r1.id, userID: "d1", upToSeq: 1, now: 7)
        let forD1 = try await store.events(recipientID: "d1", afterPosition: 0, limit: 100)
        XCTAssertEqual(forD1.count, 5)
        XCTAssertEqual(forD1, sink.events.filter { $0.recipientID == "d1" }, "replay differs from live delivery")
        let forC2 = try await store.events(recipientID: "c2", afterPosition: 0, limit: 100)
        XCTAssertEqual(forC2.count, 2)
        let tail = try await store.events(recipientID: "d1", afterPosition: forD1[2].position, limit: 100)
        XCTAssertEqual(tail, Array(forD1[3...]))
        let limited = try await store.events(recipientID: "d1", afterPosition: 0, limit: 2)
        XCTAssertEqual(limited, Array(forD1[..<2]))
        let list = try await store.rooms(userID: "d1", app: .yedi, afterActivity: nil, limit: 10)
        XCTAssertEqual(list.headPosition, forD1.last?.position)
        XCTAssertEqual(list.rooms.map(\.room.id), [r2.id, r1.id], "the room with the last activity first")
        XCTAssertEqual(list.totalUnread, 1)
        let next = try await store.rooms(
            userID: "d1", app: .yedi, afterActivity: list.rooms[0].activityPosition, limit: 10)
        XCTAssertEqual(next.rooms.map(\.room.id), [r1.id])
    }

    /// Pruning deletes a prefix of positions by creation time and records, per recipient, the highest
    /// position it removed (what `eventsAndWatermark` answers beside the events); a rerun removes nothing
    /// more; a purge forgets the user's record.
    static func pruningRemovesOldEventsAndRecordsHowFarPerRecipient(_ make: Factory) async throws {
        let store = try make({ _ in })
        let room = try await store.openRoom(
            kind: "consult", customerID: "c1", designerID: "d1", newRoomID: "r1", now: 1, postShare: nil
        ).room
        _ = try await store.appendMessage(draft("m1", room: room.id, from: "c1", text: "old"))
        var recent = draft("m2", room: room.id, from: "d1", text: "new")
        recent.sentAtMilliseconds = 5_000
        _ = try await store.appendMessage(recent)
        let before = try await store.events(recipientID: "c1", afterPosition: 0, limit: 100)
        XCTAssertEqual(before.count, 3)
        let unpruned = try await store.eventsAndWatermark(recipientID: "c1", afterPosition: 0, limit: 100)
        XCTAssertEqual(unpruned.events, before)
        XCTAssertEqual(unpruned.prunedThrough, 0)
        let removed = try await store.pruneEvents(createdBefore: 2_000)
        XCTAssertEqual(removed, 4, "room created and m1, for both members")
        let c1Through = try await store.prunedThrough(recipientID: "c1")
        XCTAssertEqual(c1Through, before[1].position)
        let strangerThrough = try await store.prunedThrough(recipientID: "c2")
        XCTAssertEqual(strangerThrough, 0)
        let after = try await store.events(recipientID: "c1", afterPosition: 0, limit: 100)
        XCTAssertEqual(after, [before[2]])
        // The stream's read of both: the same events and watermark, also with a limit and with none left.
        let both = try await store.eventsAndWatermark(recipientID: "c1", afterPosition: 0, limit: 100)
        XCTAssertEqual(both.events, [before[2]])
        XCTAssertEqual(both.prunedThrough, before[1].position)
        let none = try await store.eventsAndWatermark(recipientID: "c1", afterPosition: before[2].position, limit: 1)
        XCTAssertEqual(none.events, [])
        XCTAssertEqual(none.prunedThrough, before[1].position)
        // A subscription's first read adds the head: the highest position given out, pruned or not.
        let head = try await store.highestPosition(recipientID: "c1")
        let first = try await store.eventsWatermarkAndHead(recipientID: "c1", afterPosition: 0, limit: 1)
        XCTAssertEqual(first.events, [before[2]])
        XCTAssertEqual(first.prunedThrough, before[1].position)
        XCTAssertEqual(first.highestPosition, head)
        XCTAssertGreaterThanOrEqual(head, before[2].position)
        let stranger = try await store.eventsWatermarkAndHead(recipientID: "nobody", afterPosition: 0, limit: 10)
        XCTAssertEqual(stranger.events, [])
        XCTAssertEqual(stranger.prunedThrough, 0)
        let strangerHead = try await store.highestPosition(recipientID: "nobody")
        XCTAssertEqual(stranger.highestPosition, strangerHead, "0 on PostgreSQL; SQLite's one counter")
        let again = try await store.pruneEvents(createdBefore: 2_000)
        XCTAssertEqual(again, 0)
        let unchanged = try await store.prunedThrough(recipientID: "c1")
        XCTAssertEqual(unchanged, before[1].position)
        _ = try await store.purgeUser(userID: "c1", delivery: nil, now: 3_000)
        let forgotten = try await store.prunedThrough(recipientID: "c1")
        XCTAssertEqual(forgotten, 0)
    }

    /// A new room over the customer's daily quota is refused, concurrently too; an existing one is not.
    static func roomQuotaCountsNewRoomsOnly(_ make: Factory) async throws {
        let store = try make({ _ in })
        let quota = Quota(name: "rooms.day", limit: 3, counted: "chat rooms opened per day")
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<10 {
                group.addTask {
                    do {
                        _ = try await store.openRoom(
                            kind: "consult", customerID: "c1", designerID: "d\(index)", newRoomID: "r\(index)",
                            now: 1_000, postShare: nil, quota: quota)
                        return true
                    } catch {
                        XCTAssertEqual(error as? QuotaExceeded, QuotaExceeded(quota: quota))
                        return false
                    }
                }
            }
            var all: [Bool] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        XCTAssertEqual(outcomes.filter { $0 }.count, 3)
        let opened = try await store.rooms(userID: "c1", app: .yedi, afterActivity: nil, limit: 100).rooms
        let existing = try XCTUnwrap(opened.first).room
        let reopened = try await store.openRoom(
            kind: "consult", customerID: "c1", designerID: existing.designerID, newRoomID: "again", now: 1_000,
            postShare: nil, quota: quota)
        XCTAssertEqual(reopened.room.id, existing.id)
    }

    static func purgeRemovesRoomsMessagesAndEventsIdempotently(_ make: Factory) async throws {
        let store = try make({ _ in })
        let r1 = try await store.openRoom(
            kind: "consult", customerID: "c1", designerID: "d1", newRoomID: "r1", now: 1, postShare: nil
        ).room
        let r2 = try await store.openRoom(
            kind: "consult", customerID: "c2", designerID: "d1", newRoomID: "r2", now: 1, postShare: nil
        ).room
        _ = try await store.appendMessage(draft("m1", room: r1.id, from: "c1", text: "bye"))
        _ = try await store.appendMessage(draft("m2", room: r2.id, from: "c2", text: "stay"))
        let highest = try await store.highestPosition(recipientID: "d1")
        XCTAssertGreaterThan(highest, 0)
        let job = Delivery(key: "account/job-1", method: "yedi.chat.ChatService/PurgeUser")
        let removed = try await store.purgeUser(userID: "c1", delivery: job, now: 1)
        XCTAssertEqual(removed, PurgedRooms(roomIDs: [r1.id], firstDelivery: true))
        // The other member lost r1's events, not their position: their stream's positions only grow. (The
        // purged user's own counter may go with them: nobody subscribes as them again.)
        let afterPurge = try await store.highestPosition(recipientID: "d1")
        XCTAssertEqual(afterPurge, highest, "a purge must not lower another member's highest position")
        // The receipt was recorded with the purge: the same job delivered again is known.
        let again = try await store.purgeUser(userID: "c1", delivery: job, now: 2)
        XCTAssertEqual(again, PurgedRooms(roomIDs: [], firstDelivery: false))
        let room = try await store.room(id: r1.id)
        XCTAssertNil(room)
        let c1Events = try await store.events(recipientID: "c1", afterPosition: 0, limit: 100)
        XCTAssertEqual(c1Events, [])
        let d1Events = try await store.events(recipientID: "d1", afterPosition: 0, limit: 100)
        XCTAssertEqual(d1Events.count, 2, "only r2's events stay")
        let kept = try await store.messages(roomID: r2.id, beforeSeq: nil, limit: 13)
        XCTAssertEqual(kept.messages.count, 1)
        let gone = try await store.messages(roomID: r1.id, beforeSeq: nil, limit: 13)
        XCTAssertEqual(gone.messages, [])
    }
}

// MARK: Replicas: several stores on one database, as several processes have

extension ChatStoreContract {
    /// 20 sends to one room spread over the replicas at once get seqs 1…20, each once; a client message
    /// id sent through two replicas at once is stored once, both answered with it.
    static func concurrentSendsThroughReplicasGetEverySeqOnceAndOneMessagePerClientID(_ stores: [any ChatStore])
        async throws
    {
        let room = try await consultRoom(stores[0])
        let seqs = try await withThrowingTaskGroup(of: Int64.self) { group in
            for index in 0..<20 {
                group.addTask {
                    try await stores[index % stores.count].appendMessage(
                        draft("m\(index)", room: room.id, from: index % 2 == 0 ? "c1" : "d1", text: "\(index)")
                    ).message.seq
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(seqs.sorted(), Array(1...20))
        for round in 0..<10 {
            let answers = try await withThrowingTaskGroup(of: AppendedMessage.self) { group in
                for index in 0..<2 {
                    group.addTask {
                        try await stores[index].appendMessage(
                            draft(
                                "k\(round)-\(index)", room: room.id, from: "c1", text: "once",
                                clientID: "key-\(round)"))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertEqual(
                Set(answers.map(\.message.id)).count, 1, "round \(round): two messages for one client id")
            XCTAssertEqual(answers.filter(\.duplicate).count, 1, "round \(round)")
        }
        let page = try await stores[stores.count - 1].messages(roomID: room.id, beforeSeq: nil, limit: 100)
        XCTAssertEqual(page.messages.count, 30)
    }

    /// A reader polling a recipient's events while 8 writers on the replicas append never sees a
    /// position and later a smaller one, and misses none: a recipient's positions are commit-ordered.
    @discardableResult
    static func aReaderPollingWhileEightWritersAppendSeesEveryPositionInOrder(_ stores: [any ChatStore])
        async throws -> [Int64]
    {
        let room = try await consultRoom(stores[0])
        let done = NIOLockedValueBox(false)
        let writers = Task {
            defer { done.withLockedValue { $0 = true } }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        for index in 0..<15 {
                            _ = try await stores[writer % stores.count].appendMessage(
                                draft("w\(writer)-\(index)", room: room.id, from: "c1", text: "\(index)"))
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        var seen: [Int64] = []
        var last: Int64 = 0
        var finished = false
        while !finished {
            finished = done.withLockedValue { $0 }
            let events = try await stores[seen.count % stores.count].events(
                recipientID: "d1", afterPosition: last, limit: 50)
            for event in events {
                XCTAssertGreaterThan(event.position, last, "a position went back")
                last = event.position
                seen.append(event.position)
            }
            if finished && !events.isEmpty { finished = false }
        }
        try await writers.value
        // The room-created event, then 120 messages: every position the recipient has, once, none skipped.
        XCTAssertEqual(seen.count, 121)
        let all = try await stores[0].events(recipientID: "d1", afterPosition: 0, limit: 500)
        XCTAssertEqual(seen, all.map(\.position), "the reader missed an event or saw one twice")
        return seen
    }
}

final class SQLiteChatStoreTests: XCTestCase {
    private var make: ChatStoreContract.Factory!
    /// Three stores on the database, as three replicas would have (SQLite has one writer: they take turns).
    private var replicas: [any ChatStore] = []

    override func setUpWithError() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-chat-store-\(UUID().uuidString)").path
        let database = try ServiceDatabase.open(
            directory: directory, name: "chat", migrations: ChatServiceDefinition.migrate,
            logger: Logger(label: "test"))
        make = { sink in SQLiteChatStore(database: database, sink: sink) }
        replicas = (0..<3).map { _ in SQLiteChatStore(database: database) }
        addTeardownBlock {
            try? database.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    func testRoomsAreUniquePerPairEvenConcurrently() async throws {
        try await ChatStoreContract.roomsAreUniquePerPairEvenConcurrently(make)
    }

    func testConcurrentSendsThroughThreeReplicasGetEverySeqOnceAndOneMessagePerClientID() async throws {
        try await ChatStoreContract.concurrentSendsThroughReplicasGetEverySeqOnceAndOneMessagePerClientID(replicas)
    }

    func testAReaderPollingWhileEightWritersAppendSeesEveryPositionInOrder() async throws {
        try await ChatStoreContract.aReaderPollingWhileEightWritersAppendSeesEveryPositionInOrder(replicas)
    }

    func testMessagesGetIncreasingSeqsAndClientIDsDeduplicate() async throws {
        try await ChatStoreContract.messagesGetIncreasingSeqsAndClientIDsDeduplicate(make)
    }

    func testReadCursorsNeverMoveBackAndCountUnread() async throws {
        try await ChatStoreContract.readCursorsNeverMoveBackAndCountUnread(make)
    }

    func testEventsReplayInOrderForTheirRecipientOnly() async throws {
        try await ChatStoreContract.eventsReplayInOrderForTheirRecipientOnly(make)
    }

    func testPurgeRemovesRoomsMessagesAndEventsIdempotently() async throws {
        try await ChatStoreContract.purgeRemovesRoomsMessagesAndEventsIdempotently(make)
    }

    func testPruningRemovesOldEventsAndRecordsHowFarPerRecipient() async throws {
        try await ChatStoreContract.pruningRemovesOldEventsAndRecordsHowFarPerRecipient(make)
    }

    func testRoomQuotaCountsNewRoomsOnly() async throws {
        try await ChatStoreContract.roomQuotaCountsNewRoomsOnly(make)
    }

    func testAPairHasSeveralRoomsOverTimeOneOpenAtATime() async throws {
        try await ChatStoreContract.aPairHasSeveralRoomsOverTimeOneOpenAtATime(make)
    }

    func testAClosedRoomKeepsItsHistoryAndRefusesSends() async throws {
        try await ChatStoreContract.aClosedRoomKeepsItsHistoryAndRefusesSends(make)
    }

    func testACreatedRoomServesItsMembersOnly() async throws {
        try await ChatStoreContract.aCreatedRoomServesItsMembersOnly(make)
    }
}
