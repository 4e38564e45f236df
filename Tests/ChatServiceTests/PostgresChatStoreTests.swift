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

    func testConcurrentSendsThroughThreeReplicasGetEverySeqOnceAndOneMessagePerClientID() async throws {
        try await withReplicas { try await C.concurrentSendsThroughReplicasGetEverySeqOnceAndOneMessagePerClientID($0) }
    }

    func testAReaderPollingWhileEightWritersAppendSeesEveryPositionInOrder() async throws {
        try await withReplicas { stores in
            let seen = try await C.aReaderPollingWhileEightWritersAppendSeesEveryPositionInOrder(stores)
            // PostgreSQL-specific: positions are per recipient, so d1's are exactly 1…121 (room created, 120
            // messages); SQLite's one counter leaves gaps for the other member's events.
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
