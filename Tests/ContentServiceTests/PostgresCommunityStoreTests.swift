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

    /// The same member bookmarks one event on both replicas at once, ten times: one true, one
    /// notification and one push job each round (the primary key through `ON CONFLICT DO NOTHING`).
    func testOneBookmarkOnTwoReplicasAtOnceNotifiesOnce() async throws {
        try await withSecondReplica { other in
            let stores = [try XCTUnwrap(store), other]
            let contract = CommunityStoreContract.self
            for round in 0..<10 {
                _ = try await stores[0].createEvent(contract.event("e\(round)", owner: "ann"))
                try await stores[0].setDisplay(eventID: "e\(round)", displayed: true, app: contract.app, now: 0)
                let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for index in 0..<4 {
                        group.addTask {
                            try await stores[index % 2].bookmark(
                                eventID: "e\(round)", reader: contract.reader("bob"), now: contract.now)
                        }
                    }
                    return try await group.reduce(into: [Bool]()) { $0.append($1) }
                }
                XCTAssertEqual(outcomes.filter { $0 }.count, 1, "\(outcomes)")
            }
            let told = try await count("SELECT count(*) FROM housetainer_notification")
            XCTAssertEqual(told, 10)
            let pushes = try await count("SELECT count(*) FROM runtime_outbox")
            XCTAssertEqual(pushes, 10)
        }
    }

    /// One comment retried on both replicas at once (same client id, new comment ids): one comment, and
    /// every call answers it; the owner and the bookmarker are told once.
    func testOneCommentRetriedOnTwoReplicasAtOnceIsStoredOnce() async throws {
        try await withSecondReplica { other in
            let stores = [try XCTUnwrap(store), other]
            let contract = CommunityStoreContract.self
            _ = try await stores[0].createEvent(contract.event("e1", owner: "ann"))
            try await stores[0].setDisplay(eventID: "e1", displayed: true, app: contract.app, now: 0)
            _ = try await stores[0].bookmark(eventID: "e1", reader: contract.reader("cat"), now: contract.now)
            for round in 0..<10 {
                let answers = try await withThrowingTaskGroup(of: String.self) { group in
                    for index in 0..<4 {
                        group.addTask {
                            var comment = contract.comment("c\(round)-\(index)", on: "e1", by: "bob")
                            comment.clientID = "client-\(round)"
                            return try await stores[index % 2].addComment(comment, reader: contract.reader("bob")).id
                        }
                    }
                    return try await group.reduce(into: Set<String>()) { $0.insert($1) }
                }
                XCTAssertEqual(answers.count, 1, "every retry answers the stored comment: \(answers)")
            }
            let comments = try await count("SELECT count(*) FROM housetainer_comment")
            XCTAssertEqual(comments, 10)
            let told = try await count("SELECT count(*) FROM housetainer_notification WHERE comment_id IS NOT NULL")
            XCTAssertEqual(told, 20, "ann and cat, once per comment")
        }
    }

    /// Two admins replace the home's picks on two replicas at once, ten times: no error, and the picks
    /// are one admin's list, never a mix (the app's advisory lock).
    func testPicksReplacedOnTwoReplicasAtOnceAreOneList() async throws {
        try await withSecondReplica { other in
            let stores = [try XCTUnwrap(store), other]
            let contract = CommunityStoreContract.self
            for index in 0..<6 {
                _ = try await stores[0].createEvent(contract.event("e\(index)", owner: "ann"))
            }
            let lists = [["e0", "e1", "e2"], ["e3", "e4", "e5", "e0"]]
            for _ in 0..<10 {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<4 {
                        group.addTask {
                            try await stores[index % 2].setPicks(
                                moments: lists[index % 2], events: lists[(index + 1) % 2], houses: [],
                                app: contract.app)
                        }
                    }
                    try await group.waitForAll()
                }
                let moments = try await strings(
                    "SELECT target_id FROM housetainer_pick WHERE kind = 'moment' ORDER BY position")
                let events = try await strings(
                    "SELECT target_id FROM housetainer_pick WHERE kind = 'event' ORDER BY position")
                XCTAssertTrue(lists.contains(moments), "\(moments)")
                XCTAssertEqual(lists.firstIndex(of: events), lists.firstIndex(of: moments).map { 1 - $0 })
            }
        }
    }

    /// One event created on both replicas at once with one client id, ten times: one event.
    func testOneEventCreatedOnTwoReplicasAtOnceIsStoredOnce() async throws {
        try await withSecondReplica { other in
            let stores = [try XCTUnwrap(store), other]
            let contract = CommunityStoreContract.self
            for round in 0..<10 {
                let ids = try await withThrowingTaskGroup(of: String.self) { group in
                    for index in 0..<4 {
                        group.addTask {
                            try await stores[index % 2].createEvent(
                                contract.event("e\(round)-\(index)", owner: "ann", client: "client-\(round)")
                            ).id
                        }
                    }
                    return try await group.reduce(into: Set<String>()) { $0.insert($1) }
                }
                XCTAssertEqual(ids.count, 1, "\(ids)")
            }
            let events = try await count("SELECT count(*) FROM housetainer_event")
            XCTAssertEqual(events, 10)
        }
    }

    /// The owner deletes an event on one replica while the other comments on it, bookmarks it and edits
    /// it, thirty times: each call succeeds or answers `notFound`, none fails a foreign key (the event's
    /// row is locked from each check on), and nothing of the event is left.
    func testAnEventDeletedOnOneReplicaWhileUsedOnTheOtherAnswersNotFound() async throws {
        try await withSecondReplica { other in
            let (mine, contract) = (try XCTUnwrap(store), CommunityStoreContract.self)
            for round in 0..<30 {
                let id = "e\(round)"
                _ = try await mine.createEvent(contract.event(id, owner: "ann"))
                try await mine.setDisplay(eventID: id, displayed: true, app: contract.app, now: 0)
                let outcomes = await withTaskGroup(of: String.self) { group in
                    group.addTask {
                        await Self.outcome { try await mine.deleteEvent(id: id, reader: contract.reader("ann")) }
                    }
                    for index in 0..<3 {
                        group.addTask {
                            await Self.outcome {
                                _ = try await other.addComment(
                                    contract.comment("c\(round)-\(index)", on: id, by: "w\(index)"),
                                    reader: contract.reader("w\(index)"))
                            }
                        }
                        group.addTask {
                            await Self.outcome {
                                _ = try await other.bookmark(eventID: id, reader: contract.reader("b\(index)"), now: 0)
                            }
                        }
                    }
                    group.addTask {
                        await Self.outcome {
                            try await other.updateEvent(
                                id: id,
                                EventFieldsRecord(
                                    title: "t", scheduleType: 1, atMilliseconds: 1, detail: "", link: "",
                                    imageIDs: ["x", "y"]), reader: contract.reader("ann"), now: 1)
                        }
                    }
                    return await group.reduce(into: [String]()) { $0.append($1) }
                }
                XCTAssertEqual(outcomes.filter { $0 != "ok" && $0 != "notFound" }, [], "round \(round)")
            }
            let left = try await count(
                """
                SELECT (SELECT count(*) FROM housetainer_event) + (SELECT count(*) FROM housetainer_event_image)
                    + (SELECT count(*) FROM housetainer_comment) + (SELECT count(*) FROM housetainer_bookmark)
                    + (SELECT count(*) FROM housetainer_notification)
                """)
            XCTAssertEqual(left, 0)
        }
    }

    /// "ok", "notFound", or the other error a call threw.
    private static func outcome(_ call: () async throws -> Void) async -> String {
        do {
            try await call()
            return "ok"
        } catch CommunityStoreError.notFound {
            return "notFound"
        } catch {
            return String(reflecting: error)
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
