import Foundation
import GRDB
import PostgresNIO
import PostgresTestSupport
import RPCAccess
import ServiceRuntime
import XCTest

@testable import ContentService

/// The community contract against the PostgreSQL store, on a fresh database per test; then what needs
/// replicas: two pools on one database, as two processes have.
final class PostgresCommunityStoreTests: XCTestCase {
    /// The service's versions in SQLite's order: the runtime's, ContentService's six, then the community's.
    static let migrations =
        RuntimePostgresSchema.migrations + ContentPostgresSchema.migrations + CommunityPostgresSchema.migrations

    private var database: TestDatabase?
    private var store: PostgresCommunityStore!

    override func setUp() async throws {
        let database = try await TestDatabase(service: "content", migrations: Self.migrations)
        self.database = database
        store = Self.store(on: database.postgres, replica: "a")
    }

    override func tearDown() async throws {
        try await database?.close()
        database = nil
    }

    static func store(on postgres: ServicePostgres, replica: String) -> PostgresCommunityStore {
        PostgresCommunityStore(
            postgres: postgres,
            push: CommunityPush(
                outbox: Outbox(ids: SequentialIDGenerator(prefix: "job-\(replica)-"), clock: ManualClock())))
    }

    func testVersionNamesAreSQLitesNames() {
        var migrator = DatabaseMigrator()
        CommunitySchema.migrate(&migrator)
        XCTAssertEqual(CommunityPostgresSchema.migrations.map(\.name), migrator.migrations)
    }

    // MARK: The contract

    func testHousetainerEachNotificationQueuesOnePushJobInItsTransaction() async throws {
        try await CommunityStoreContract.housetainerNotificationsAreOnePerRecipientNeverTheActorNorFromTheBlocked(store)
        let methods = try await strings("SELECT method FROM runtime_outbox ORDER BY seq")
        XCTAssertEqual(methods, Array(repeating: "yedi.account.Notifications/Notify", count: 4))
    }

    func testHousetainerEventsAreCreatedOnceAndShownByTheDisplayFlag() async throws {
        try await CommunityStoreContract.housetainerEventsAreCreatedOnceAndShownByTheDisplayFlag(store)
    }

    func testHousetainerNotificationsAreOnePerRecipientNeverTheActorNorFromTheBlocked() async throws {
        try await CommunityStoreContract.housetainerNotificationsAreOnePerRecipientNeverTheActorNorFromTheBlocked(store)
    }

    func testHousetainerBlockedOwnersLeaveEveryListAndPagesStayFull() async throws {
        try await CommunityStoreContract.housetainerBlockedOwnersLeaveEveryListAndPagesStayFull(store)
    }

    func testHousetainerHousesAndPicksShowOnlyDisplayedItems() async throws {
        try await CommunityStoreContract.housetainerHousesAndPicksShowOnlyDisplayedItems(store)
    }

    func testHousetainerForgettingAMemberRemovesWhatTheyOwnOrWrote() async throws {
        let contract = CommunityStoreContract.self
        _ = try await store.createEvent(contract.event("gone-event", owner: "gone"))
        _ = try await store.createEvent(contract.event("kept-event", owner: "kept"))
        for id in ["gone-event", "kept-event"] {
            try await store.setDisplay(eventID: id, displayed: true, app: contract.app, now: contract.now)
        }
        _ = try await store.bookmark(eventID: "kept-event", reader: contract.reader("gone"), now: contract.now)
        _ = try await store.bookmark(eventID: "gone-event", reader: contract.reader("kept"), now: contract.now)
        _ = try await store.addComment(
            contract.comment("c1", on: "kept-event", by: "gone"), reader: contract.reader("gone"))
        _ = try await store.block("gone", reader: contract.reader("kept"), now: contract.now)
        _ = try await store.block("kept", reader: contract.reader("gone"), now: contract.now)
        try await XCTUnwrap(database).postgres.write { tx in try await PostgresCommunityStore.forget("gone", tx) }
        let left = try await count(
            """
            SELECT (SELECT count(*) FROM housetainer_event WHERE owner_id = 'gone')
                + (SELECT count(*) FROM housetainer_event_image WHERE event_id = 'gone-event')
                + (SELECT count(*) FROM housetainer_comment WHERE writer_id = 'gone')
                + (SELECT count(*) FROM housetainer_bookmark WHERE member_id = 'gone' OR event_id = 'gone-event')
                + (SELECT count(*) FROM housetainer_notification WHERE recipient_id = 'gone' OR actor_id = 'gone')
                + (SELECT count(*) FROM housetainer_block WHERE blocker_id = 'gone' OR blocked_id = 'gone')
            """)
        XCTAssertEqual(left, 0)
        let kept = try await store.event(id: "kept-event", reader: contract.reader("kept"))
        XCTAssertEqual(kept?.commentCount, 0)
    }

    /// Pages, comments on a house, edits and the home's order: what the contract reaches only in part.
    func testPagesCommentsAndEditsReadBackAsOnSQLite() async throws {
        let contract = CommunityStoreContract.self
        for index in 0..<5 {
            _ = try await store.createEvent(contract.event("e\(index)", owner: "ann", at: contract.now + 10))
            try await store.setDisplay(eventID: "e\(index)", displayed: true, app: contract.app, now: contract.now)
        }
        let first = try await store.events(
            ongoing: true, now: contract.now, reader: contract.reader("bob"), after: nil, limit: 2)
        XCTAssertEqual(first.events.map(\.id), ["e0", "e1"])
        let next = try await store.events(
            ongoing: true, now: contract.now, reader: contract.reader("bob"),
            after: PagePosition(key: contract.now + 10, id: "e1"), limit: 2)
        XCTAssertEqual(next.events.map(\.id), ["e2", "e3"])
        let mine = try await store.memberEvents(
            memberID: "ann", reader: contract.reader("bob"), after: PagePosition(key: contract.now, id: "e3"), limit: 9)
        XCTAssertEqual(mine.events.map(\.id), ["e2", "e1", "e0"])
        try await store.updateEvent(
            id: "e0",
            EventFieldsRecord(
                title: "새", scheduleType: 2, atMilliseconds: contract.now + 20, detail: "d", link: "l",
                imageIDs: ["x", "y", "z"]), reader: contract.reader("ann"), now: contract.now + 1)
        let edited = try await store.event(id: "e0", reader: contract.reader("bob"))
        XCTAssertEqual(edited?.imageIDs, ["x", "y", "z"])
        XCTAssertEqual(edited?.scheduleType, 2)
        _ = try await store.createHouse(contract.house("h1", owner: "ann"))
        try await store.setHouseDisplay(houseID: "h1", displayed: true, app: contract.app, now: contract.now)
        var fields = contract.house("h1", owner: "ann").fields
        fields.imageIDs = ["k"]
        fields.domestic = false
        try await store.updateHouse(id: "h1", fields, app: contract.app, now: contract.now + 1)
        var retry = contract.house("h9", owner: "zed")
        retry.clientID = "h1"
        let again = try await store.createHouse(retry)
        XCTAssertEqual(again.id, "h1", "the same creator and client id: the stored house")
        let letter = CommentRecord(
            id: "c1", app: contract.app, target: .house("h1"), writerID: "bob", clientID: "c1", content: "안녕",
            createdAtMilliseconds: contract.now)
        _ = try await store.addComment(letter, reader: contract.reader("bob"))
        let house = try await store.house(id: "h1", reader: contract.reader("cat"))
        XCTAssertEqual(house?.fields.imageIDs, ["k"])
        XCTAssertEqual(house?.fields.domestic, false)
        XCTAssertEqual(house?.commentCount, 1)
        let letters = try await store.comments(on: .house("h1"), reader: contract.reader("cat"), after: nil, limit: 5)
        XCTAssertEqual(letters, [letter])
        let ann = try await store.notifications(reader: contract.reader("ann"), after: nil, limit: 5)
        XCTAssertEqual(ann.notifications.map(\.type), [.houseCommented])
        XCTAssertEqual(ann.unread, 1)
        try await store.setPicks(moments: ["e3", "e1", "e3"], events: [], houses: ["h1"], app: contract.app)
        let home = try await store.home(reader: contract.reader("cat", admin: true))
        XCTAssertEqual(home.moments.map(\.id), ["e3", "e1"])
        XCTAssertEqual(home.houses.map(\.id), ["h1"])
        do {
            try await store.updateHouse(id: "nope", fields, app: contract.app, now: contract.now)
            XCTFail("no such house")
        } catch CommunityStoreError.notFound {}
    }

    // MARK: Two replicas on one database

    /// The contract's replica checks with two stores on two pools of one database; the tables' counts
    /// add what the protocol does not show (push jobs, images).
    func testOneBookmarkOnTwoReplicasAtOnceNotifiesOnce() async throws {
        try await withSecondReplica { other in
            try await CommunityStoreContract.oneBookmarkOnTwoReplicasAtOnceNotifiesOnce([try XCTUnwrap(store), other])
            let pushes = try await count("SELECT count(*) FROM runtime_outbox")
            XCTAssertEqual(pushes, 10, "one push job per notification")
        }
    }

    func testOneCommentRetriedOnTwoReplicasAtOnceIsStoredOnce() async throws {
        try await withSecondReplica { other in
            try await CommunityStoreContract.oneCommentRetriedOnTwoReplicasAtOnceIsStoredOnce(
                [try XCTUnwrap(store), other])
        }
    }

    /// The app's advisory lock keeps two admins' lists apart.
    func testPicksReplacedOnTwoReplicasAtOnceAreOneList() async throws {
        try await withSecondReplica { other in
            try await CommunityStoreContract.picksReplacedOnTwoReplicasAtOnceAreOneList([try XCTUnwrap(store), other])
        }
    }

    func testOneEventCreatedOnTwoReplicasAtOnceIsStoredOnce() async throws {
        try await withSecondReplica { other in
            try await CommunityStoreContract.oneEventCreatedOnTwoReplicasAtOnceIsStoredOnce(
                [try XCTUnwrap(store), other])
        }
    }

    /// The event's row is locked from each check on, so no insert fails its foreign key.
    func testAnEventDeletedOnOneReplicaWhileUsedOnTheOtherAnswersNotFound() async throws {
        try await withSecondReplica { other in
            try await CommunityStoreContract.anEventDeletedOnOneReplicaWhileUsedOnTheOtherAnswersNotFound(
                [try XCTUnwrap(store), other])
            let left = try await count(
                """
                SELECT (SELECT count(*) FROM housetainer_event) + (SELECT count(*) FROM housetainer_event_image)
                    + (SELECT count(*) FROM housetainer_comment) + (SELECT count(*) FROM housetainer_bookmark)
                    + (SELECT count(*) FROM housetainer_notification)
                """)
            XCTAssertEqual(left, 0)
        }
    }

    // MARK: Helpers

    /// Runs `body` with a second replica's store: its own pool on the same database.
    private func withSecondReplica(_ body: (PostgresCommunityStore) async throws -> Void) async throws {
        try await XCTUnwrap(database).withSecondPool { postgres in
            try await body(Self.store(on: postgres, replica: "b"))
        }
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        try await XCTUnwrap(database).postgres.snapshot { tx in try await tx.query(query).first?.decode(Int.self) ?? -1
        }
    }

    private func strings(_ query: PostgresQuery) async throws -> [String] {
        try await XCTUnwrap(database).postgres.snapshot { tx in
            try await tx.query(query).map { try $0.decode(String.self) }
        }
    }
}
