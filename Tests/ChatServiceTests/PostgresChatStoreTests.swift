import Foundation
import GRDB
import NIOConcurrencyHelpers
import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import ChatService
@testable import ServiceRuntime

/// `ChatStoreContract` on PostgreSQL, each check on a fresh database migrated with `ChatPostgresSchema`,
/// plus what replicas need, with three stores on three pools of one database (three replicas).
final class PostgresChatStoreTests: XCTestCase {
    private typealias C = ChatStoreContract
    private var database: TestDatabase!
    private var make: C.Factory!

    override func setUp() async throws {
        database = try await TestDatabase(
            service: "chat", migrations: RuntimePostgresSchema.migrations + ChatPostgresSchema.migrations)
        let postgres = database.postgres
        make = { sink in PostgresChatStore(postgres: postgres, sink: sink) }
    }

    override func tearDown() async throws {
        try await database?.close()
    }

    func testVersionsAreNamedAndOrderedAsOnSQLite() {
        var migrator = DatabaseMigrator()
        RuntimeSchema.register(in: &migrator)
        ChatServiceDefinition.migrate(&migrator)
        XCTAssertEqual(ChatServiceDefinition.postgresMigrations?.map(\.name), migrator.migrations)
    }

    func testRoomsAreUniquePerPairEvenConcurrently() async throws {
        try await C.roomsAreUniquePerPairEvenConcurrently(make)
    }

    func testMessagesGetIncreasingSeqsAndClientIDsDeduplicate() async throws {
        try await C.messagesGetIncreasingSeqsAndClientIDsDeduplicate(make)
    }

    func testReadCursorsNeverMoveBackAndCountUnread() async throws {
        try await C.readCursorsNeverMoveBackAndCountUnread(make)
    }

    func testEventsReplayInOrderForTheirRecipientOnly() async throws {
        try await C.eventsReplayInOrderForTheirRecipientOnly(make)
    }

    func testPurgeRemovesRoomsMessagesAndEventsIdempotently() async throws {
        try await C.purgeRemovesRoomsMessagesAndEventsIdempotently(make)
    }

    func testPruningRemovesOldEventsAndRecordsHowFarPerRecipient() async throws {
        try await C.pruningRemovesOldEventsAndRecordsHowFarPerRecipient(make)
    }

    func testRoomQuotaCountsNewRoomsOnly() async throws {
        try await C.roomQuotaCountsNewRoomsOnly(make)
    }

    func testAPairHasSeveralRoomsOverTimeOneOpenAtATime() async throws {
        try await C.aPairHasSeveralRoomsOverTimeOneOpenAtATime(make)
    }

    func testAClosedRoomKeepsItsHistoryAndRefusesSends() async throws {
        try await C.aClosedRoomKeepsItsHistoryAndRefusesSends(make)
    }

    func testACreatedRoomServesItsMembersOnly() async throws {
        try await C.aCreatedRoomServesItsMembersOnly(make)
    }

    // MARK: Replicas

    /// Three stores on three pools, as three replicas of ChatService.
    private func withReplicas(_ body: ([any ChatStore]) async throws -> Void) async throws {
        try await database.withSecondPool { second in
            try await database.withSecondPool { third in
                try await body([database.postgres, second, third].map { PostgresChatStore(postgres: $0) })
            }
        }
    }

    /// 20 sends to one room spread over three replicas at once get seqs 1…20, each once; a client message
    /// id sent through two replicas at once is stored once, both answered with it.
    func testConcurrentSendsThroughThreeReplicasGetEverySeqOnceAndOneMessagePerClientID() async throws {
        try await withReplicas { stores in
            let room = try await C.consultRoom(stores[0])
            let seqs = try await withThrowingTaskGroup(of: Int64.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        try await stores[index % 3].appendMessage(
                            C.draft("m\(index)", room: room.id, from: index % 2 == 0 ? "c1" : "d1", text: "\(index)")
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
                                C.draft(
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
            let page = try await stores[2].messages(roomID: room.id, beforeSeq: nil, limit: 100)
            XCTAssertEqual(page.messages.count, 30)
        }
    }

    /// A reader polling a recipient's events while 8 writers on three replicas append never sees a
    /// position and later a smaller one, and misses none: positions are per recipient and commit-ordered.
    func testAReaderPollingWhileEightWritersAppendSeesEveryPositionInOrder() async throws {
        try await withReplicas { stores in
            let room = try await C.consultRoom(stores[0])
            let done = NIOLockedValueBox(false)
            let writers = Task {
                defer { done.withLockedValue { $0 = true } }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<8 {
                        group.addTask {
                            for index in 0..<15 {
                                _ = try await stores[writer % 3].appendMessage(
                                    C.draft("w\(writer)-\(index)", room: room.id, from: "c1", text: "\(index)"))
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
                let events = try await stores[(seen.count) % 3].events(
                    recipientID: "d1", afterPosition: last, limit: 50)
                for event in events {
                    XCTAssertGreaterThan(event.position, last, "a position went back")
                    last = event.position
                    seen.append(event.position)
                }
                if finished && !events.isEmpty { finished = false }
            }
            try await writers.value
            // The room-created event, then 120 messages: every position once, none skipped.
            XCTAssertEqual(seen, Array(1...121))
        }
    }

    /// The room list orders by each member's own position, which another user's purge never lowers; the
    /// purged user's own counter row goes with them (it names them).
    func testTheHeadIsPerRecipientAndOutlivesAnotherUsersPurge() async throws {
        let store = try make({ _ in })
        let r1 = try await C.consultRoom(store)
        _ = try await store.appendMessage(C.draft("m1", room: r1.id, from: "c1", text: "hi"))
        let other = try await store.openRoom(
            kind: "consult", customerID: "c2", designerID: "d2", newRoomID: "r2", now: 1, postShare: nil)
        let c1Head = try await store.highestPosition(recipientID: "c1")
        XCTAssertEqual(c1Head, 2, "room created, then m1")
        let c2Head = try await store.highestPosition(recipientID: "c2")
        XCTAssertEqual(c2Head, 1, "another recipient counts from 1")
        let d1Head = try await store.highestPosition(recipientID: "d1")
        XCTAssertEqual(d1Head, 2, "room created, then m1")
        _ = try await store.purgeUser(userID: "c1", delivery: nil, now: 5)
        let afterPurge = try await store.highestPosition(recipientID: "d1")
        XCTAssertEqual(afterPurge, 2, "the other member of the purged room keeps their position")
        let purgedHead = try await store.highestPosition(recipientID: "c1")
        XCTAssertEqual(purgedHead, 0, "the purged user's counter row is gone")
        let list = try await store.rooms(userID: "c2", app: .yedi, afterActivity: nil, limit: 10)
        XCTAssertEqual(list.rooms.map(\.room.id), [other.room.id])
    }
}
