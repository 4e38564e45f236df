import Foundation
import GRDB
import Logging
import RPCAccess
import ServiceRuntime
import XCTest

@testable import ContentService

/// What every `CommunityStore` must do, written against the protocol: a second engine gets a class like
/// `SQLiteCommunityStoreTests`. Purging is the SQLite store's (`forget`, inside ContentService's purge).
enum CommunityStoreContract {
    static let app: AppID = "housetainer"
    static let now: Int64 = 1_790_000_000_000

    static func reader(_ id: String, admin: Bool = false) -> CommunityReader {
        CommunityReader(id: id, app: app, isAdmin: admin)
    }

    static func event(_ id: String, owner: String, at: Int64 = now + 60_000, client: String? = nil) -> EventRecord {
        EventRecord(
            id: id, app: app, ownerID: owner, clientID: client ?? id, title: "집들이", scheduleType: 1,
            atMilliseconds: at, detail: "내용", link: "", imageIDs: ["img-\(id)-1", "img-\(id)-2"],
            createdAtMilliseconds: now, updatedAtMilliseconds: now)
    }

    static func comment(_ id: String, on event: String, by writer: String) -> CommentRecord {
        CommentRecord(
            id: id, app: app, target: .event(event), writerID: writer, clientID: id, content: "좋아요",
            createdAtMilliseconds: now)
    }

    static func housetainerEventsAreCreatedOnceAndShownByTheDisplayFlag(_ store: any CommunityStore) async throws {
        let created = try await store.createEvent(event("e1", owner: "ann"))
        let again = try await store.createEvent(event("e2", owner: "ann", client: "e1"))
        XCTAssertEqual(again.id, created.id, "one event per owner and client id")
        let own = try await store.event(id: "e1", reader: reader("ann"))
        XCTAssertEqual(own?.imageIDs, ["img-e1-1", "img-e1-2"])
        let byOther = try await store.event(id: "e1", reader: reader("bob"))
        XCTAssertNil(byOther, "N: not shown to others")
        let byAdmin = try await store.event(id: "e1", reader: reader("op", admin: true))
        XCTAssertNotNil(byAdmin)
        let otherApp = try await store.event(
            id: "e1", reader: CommunityReader(id: "ann", app: "zipadoo", isAdmin: false))
        XCTAssertNil(otherApp)
        try await store.setDisplay(eventID: "e1", displayed: true, app: app, now: now)
        let shown = try await store.event(id: "e1", reader: reader("bob"))
        XCTAssertEqual(shown?.displayed, true)
        do {
            try await store.deleteEvent(id: "e1", reader: reader("bob"))
            XCTFail("not the owner")
        } catch CommunityStoreError.notOwner {}
        try await store.deleteEvent(id: "e1", reader: reader("ann"))
        let gone = try await store.event(id: "e1", reader: reader("ann"))
        XCTAssertNil(gone)
    }

    static func housetainerNotificationsAreOnePerRecipientNeverTheActorNorFromTheBlocked(
        _ store: any CommunityStore
    ) async throws {
        _ = try await store.createEvent(event("e1", owner: "ann"))
        try await store.setDisplay(eventID: "e1", displayed: true, app: app, now: now)
        let annBookmarked = try await store.bookmark(eventID: "e1", reader: reader("ann"), now: now)
        XCTAssertTrue(annBookmarked)
        let bobBookmarked = try await store.bookmark(eventID: "e1", reader: reader("bob"), now: now)
        XCTAssertTrue(bobBookmarked)
        let twice = try await store.bookmark(eventID: "e1", reader: reader("bob"), now: now)
        XCTAssertFalse(twice)
        _ = try await store.bookmark(eventID: "e1", reader: reader("cat"), now: now)
        _ = try await store.block("dan", reader: reader("cat"), now: now)
        _ = try await store.addComment(comment("c1", on: "e1", by: "dan"), reader: reader("dan"))
        let ann = try await store.notifications(reader: reader("ann"), after: nil, limit: 10)
        XCTAssertEqual(
            ann.notifications.map(\.type), [.eventCommented, .eventBookmarked, .eventBookmarked],
            "one for the comment though ann bookmarked her own event; none for her own bookmark")
        let bob = try await store.notifications(reader: reader("bob"), after: nil, limit: 10)
        XCTAssertEqual(bob.notifications.map(\.type), [.bookmarkedEventCommented])
        let cat = try await store.notifications(reader: reader("cat"), after: nil, limit: 10)
        XCTAssertTrue(cat.notifications.isEmpty, "cat blocked dan before the comment")
        try await store.deleteComment(id: "c1", reader: reader("op", admin: true))
        let bobAfter = try await store.notifications(reader: reader("bob"), after: nil, limit: 10)
        XCTAssertTrue(bobAfter.notifications.isEmpty, "the comment's notifications went with it")
        let unread = try await store.markRead(upTo: ann.notifications[1].id, reader: reader("ann"))
        XCTAssertEqual(unread, 0)
    }

    static func housetainerBlockedOwnersLeaveEveryListAndPagesStayFull(_ store: any CommunityStore) async throws {
        for index in 0..<4 {
            _ = try await store.createEvent(event("pest-\(index)", owner: "pest", at: now + Int64(index) * 10 + 1))
            _ = try await store.createEvent(event("good-\(index)", owner: "good", at: now + Int64(index) * 10 + 2))
            try await store.setDisplay(eventID: "pest-\(index)", displayed: true, app: app, now: now)
            try await store.setDisplay(eventID: "good-\(index)", displayed: true, app: app, now: now)
            _ = try await store.bookmark(eventID: "pest-\(index)", reader: reader("me"), now: now)
        }
        _ = try await store.block("pest", reader: reader("me"), now: now)
        let page = try await store.events(ongoing: true, now: now, reader: reader("me"), after: nil, limit: 4)
        XCTAssertEqual(page.events.map(\.id), ["good-0", "good-1", "good-2", "good-3"])
        let past = try await store.events(ongoing: false, now: now + 100, reader: reader("me"), after: nil, limit: 4)
        XCTAssertEqual(past.events.map(\.id), ["good-3", "good-2", "good-1", "good-0"])
        let bookmarks = try await store.bookmarkedEvents(reader: reader("me"), after: nil, limit: 10)
        XCTAssertTrue(bookmarks.events.isEmpty)
        let unblocked = try await store.unblock("pest", reader: reader("me"))
        XCTAssertTrue(unblocked)
        let again = try await store.bookmarkedEvents(reader: reader("me"), after: nil, limit: 10)
        XCTAssertEqual(again.events.count, 4)
    }
}

extension CommunityStoreContract {
    static func house(_ id: String, owner: String, category: Int = 1, at time: Int64 = now) -> HouseRecord {
        HouseRecord(
            id: id, app: app, ownerID: owner, creatorID: "op", clientID: id,
            fields: HouseFieldsRecord(
                ownerID: owner, name: "집", title: "제목", content: "내용", category: category,
                imageIDs: ["img-\(id)-1", "img-\(id)-2"], coverIndex: 1, domestic: true, location: "서울",
                detailedLocation: ""),
            createdAtMilliseconds: time, updatedAtMilliseconds: time)
    }

    static func housetainerHousesAndPicksShowOnlyDisplayedItems(_ store: any CommunityStore) async throws {
        _ = try await store.createHouse(house("h1", owner: "ann", at: now))
        _ = try await store.createHouse(house("h2", owner: "bob", category: 4, at: now + 1))
        _ = try await store.createEvent(event("e1", owner: "ann"))
        try await store.setHouseDisplay(houseID: "h2", displayed: true, app: app, now: now)
        let byCat = try await store.houses(category: nil, ownerID: nil, reader: reader("cat"), after: nil, limit: 10)
        XCTAssertEqual(byCat.map(\.id), ["h2"], "h1 is not displayed")
        let byAdmin = try await store.houses(
            category: nil, ownerID: nil, reader: reader("op", admin: true), after: nil, limit: 10)
        XCTAssertEqual(byAdmin.map(\.id), ["h2", "h1"], "newest first")
        XCTAssertEqual(byAdmin.last?.fields.imageIDs, ["img-h1-1", "img-h1-2"])
        let collectors = try await store.houses(category: 4, ownerID: nil, reader: reader("cat"), after: nil, limit: 10)
        XCTAssertEqual(collectors.map(\.id), ["h2"])
        try await store.setPicks(moments: ["e1"], events: [], houses: ["h1", "h2"], app: app)
        let home = try await store.home(reader: reader("cat"))
        XCTAssertTrue(home.moments.isEmpty, "e1 is not displayed")
        XCTAssertEqual(home.houses.map(\.id), ["h2"])
        do {
            try await store.setPicks(moments: [], events: ["nope"], houses: [], app: app)
            XCTFail("an unknown event")
        } catch CommunityStoreError.notFound {}
    }
}

final class SQLiteCommunityStoreTests: XCTestCase {
    private var database: ServiceDatabase!
    private var store: SQLiteCommunityStore!

    override func setUp() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("community-\(UUID())").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "test.community-store")
        logger.logLevel = .warning
        database = try ServiceDatabase.open(
            directory: directory, name: "content", migrations: ContentServiceDefinition.migrate, logger: logger)
        store = SQLiteCommunityStore(
            database: database,
            push: CommunityPush(outbox: Outbox(ids: SequentialIDGenerator(prefix: "job"), clock: ManualClock())))
    }

    func testHousetainerEachNotificationQueuesOnePushJobInItsTransaction() async throws {
        try await CommunityStoreContract.housetainerNotificationsAreOnePerRecipientNeverTheActorNorFromTheBlocked(store)
        // ann 3 (two bookmarks, one comment), bob 1, cat none: one Notify job each, nothing delivers them here.
        let methods = try await database.read { db in
            try String.fetchAll(db, sql: "SELECT method FROM runtime_outbox ORDER BY created_at_ms, id")
        }
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
        try await database.write { db in try SQLiteCommunityStore.forget("gone", db) }
        let left = try await database.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT (SELECT count(*) FROM housetainer_event WHERE owner_id = 'gone')
                        + (SELECT count(*) FROM housetainer_event_image WHERE event_id = 'gone-event')
                        + (SELECT count(*) FROM housetainer_comment WHERE writer_id = 'gone')
                        + (SELECT count(*) FROM housetainer_bookmark WHERE member_id = 'gone' OR event_id = 'gone-event')
                        + (SELECT count(*) FROM housetainer_notification WHERE recipient_id = 'gone' OR actor_id = 'gone')
                        + (SELECT count(*) FROM housetainer_block WHERE blocker_id = 'gone' OR blocked_id = 'gone')
                    """)
        }
        XCTAssertEqual(left, 0)
        let kept = try await store.event(id: "kept-event", reader: contract.reader("kept"))
        XCTAssertEqual(kept?.commentCount, 0)
    }
}
