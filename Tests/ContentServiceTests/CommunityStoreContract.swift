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

    // MARK: Replicas

    /// The same member bookmarks one event on two replicas at once, ten times: one true, and the owner is
    /// told once per event.
    static func oneBookmarkOnTwoReplicasAtOnceNotifiesOnce(_ stores: [any CommunityStore]) async throws {
        for round in 0..<10 {
            _ = try await stores[0].createEvent(event("e\(round)", owner: "ann"))
            try await stores[0].setDisplay(eventID: "e\(round)", displayed: true, app: app, now: 0)
            let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        try await stores[index % stores.count].bookmark(
                            eventID: "e\(round)", reader: reader("bob"), now: now)
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            XCTAssertEqual(outcomes.filter { $0 }.count, 1, "\(outcomes)")
        }
        let told = try await stores[1].notifications(reader: reader("ann"), after: nil, limit: 100)
        XCTAssertEqual(told.notifications.count, 10)
        XCTAssertEqual(Set(told.notifications.map(\.target)).count, 10, "one per event")
        let bookmarked = try await stores[1].bookmarkedEvents(reader: reader("bob"), after: nil, limit: 100)
        XCTAssertEqual(bookmarked.events.count, 10)
        let actor = try await stores[0].notifications(reader: reader("bob"), after: nil, limit: 100)
        XCTAssertEqual(actor.notifications, [], "the one who bookmarks is never told")
    }

    /// One comment retried on two replicas at once (same client id, new comment ids), ten times: one
    /// comment, every call answers it, and the owner and the bookmarker are told once per comment.
    static func oneCommentRetriedOnTwoReplicasAtOnceIsStoredOnce(_ stores: [any CommunityStore]) async throws {
        _ = try await stores[0].createEvent(event("e1", owner: "ann"))
        try await stores[0].setDisplay(eventID: "e1", displayed: true, app: app, now: 0)
        _ = try await stores[0].bookmark(eventID: "e1", reader: reader("cat"), now: now)
        for round in 0..<10 {
            let answers = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        var retried = comment("c\(round)-\(index)", on: "e1", by: "bob")
                        retried.clientID = "client-\(round)"
                        return try await stores[index % stores.count].addComment(retried, reader: reader("bob")).id
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            XCTAssertEqual(answers.count, 1, "every retry answers the stored comment: \(answers)")
        }
        let comments = try await stores[1].comments(on: .event("e1"), reader: reader("ann"), after: nil, limit: 100)
        XCTAssertEqual(comments.count, 10)
        for member in ["ann", "cat"] {
            let told = try await stores[1].notifications(reader: reader(member), after: nil, limit: 100)
            let aboutComments = told.notifications.compactMap(\.commentID)
            XCTAssertEqual(aboutComments.count, 10, "\(member): once per comment")
            XCTAssertEqual(Set(aboutComments), Set(comments.map(\.id)), member)
        }
        let writer = try await stores[0].notifications(reader: reader("bob"), after: nil, limit: 100)
        XCTAssertEqual(writer.notifications, [], "the writer is never told")
    }

    /// Two admins replace the home's picks on two replicas at once, ten times: no error, and the picks
    /// are one admin's list, never a mix.
    static func picksReplacedOnTwoReplicasAtOnceAreOneList(_ stores: [any CommunityStore]) async throws {
        for index in 0..<7 {
            _ = try await stores[0].createEvent(event("e\(index)", owner: "ann"))
            try await stores[0].setDisplay(eventID: "e\(index)", displayed: true, app: app, now: 0)
        }
        // No event in both lists: `home` shows an item picked twice once, which could hide a mix.
        let lists = [["e0", "e1", "e2"], ["e3", "e4", "e5", "e6"]]
        for _ in 0..<10 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        try await stores[index % stores.count].setPicks(
                            moments: lists[index % 2], events: lists[(index + 1) % 2], houses: [], app: app)
                    }
                }
                try await group.waitForAll()
            }
            let home = try await stores[1].home(reader: reader("bob"))
            let (moments, events) = (home.moments.map(\.id), home.events.map(\.id))
            XCTAssertTrue(lists.contains(moments), "\(moments)")
            XCTAssertEqual(lists.firstIndex(of: events), lists.firstIndex(of: moments).map { 1 - $0 })
        }
    }

    /// One event created on two replicas at once with one client id, ten times: one event per client id.
    static func oneEventCreatedOnTwoReplicasAtOnceIsStoredOnce(_ stores: [any CommunityStore]) async throws {
        var stored: Set<String> = []
        for round in 0..<10 {
            let ids = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        try await stores[index % stores.count].createEvent(
                            event("e\(round)-\(index)", owner: "ann", client: "client-\(round)")
                        ).id
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            XCTAssertEqual(ids.count, 1, "\(ids)")
            stored.formUnion(ids)
        }
        let own = try await stores[1].memberEvents(memberID: "ann", reader: reader("ann"), after: nil, limit: 100)
        XCTAssertEqual(Set(own.events.map(\.id)), stored)
        XCTAssertEqual(own.events.count, 10)
    }

    /// The owner deletes an event on one replica while another comments on it, bookmarks it and edits
    /// it, thirty times: each call succeeds or answers `notFound` (never a foreign key's failure), and
    /// nothing of the event is left for anyone to see.
    static func anEventDeletedOnOneReplicaWhileUsedOnTheOtherAnswersNotFound(_ stores: [any CommunityStore])
        async throws
    {
        let (mine, other) = (stores[0], stores[1])
        for round in 0..<30 {
            let id = "e\(round)"
            _ = try await mine.createEvent(event(id, owner: "ann"))
            try await mine.setDisplay(eventID: id, displayed: true, app: app, now: 0)
            let outcomes = await withTaskGroup(of: String.self) { group in
                group.addTask { await outcome { try await mine.deleteEvent(id: id, reader: reader("ann")) } }
                for index in 0..<3 {
                    group.addTask {
                        await outcome {
                            _ = try await other.addComment(
                                comment("c\(round)-\(index)", on: id, by: "w\(index)"), reader: reader("w\(index)"))
                        }
                    }
                    group.addTask {
                        await outcome { _ = try await other.bookmark(eventID: id, reader: reader("b\(index)"), now: 0) }
                    }
                }
                group.addTask {
                    await outcome {
                        try await other.updateEvent(
                            id: id,
                            EventFieldsRecord(
                                title: "t", scheduleType: 1, atMilliseconds: 1, detail: "", link: "",
                                imageIDs: ["x", "y"]), reader: reader("ann"), now: 1)
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
            XCTAssertEqual(outcomes.filter { $0 != "ok" && $0 != "notFound" }, [], "round \(round)")
            let left = try await other.event(id: id, reader: reader("ann"))
            XCTAssertNil(left, "round \(round)")
        }
        let owned = try await other.memberEvents(memberID: "ann", reader: reader("ann"), after: nil, limit: 100)
        XCTAssertEqual(owned.events.map(\.id), [])
        let told = try await other.notifications(reader: reader("ann"), after: nil, limit: 100)
        XCTAssertEqual(told.notifications, [], "notifications go with their event")
        for index in 0..<3 {
            let bookmarked = try await other.bookmarkedEvents(reader: reader("b\(index)"), after: nil, limit: 100)
            XCTAssertEqual(bookmarked.events.map(\.id), [])
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

    // MARK: Replicas

    /// Two stores on the database, as two replicas would have (SQLite has one writer: they take turns).
    private var replicas: [any CommunityStore] {
        let outbox = Outbox(ids: SequentialIDGenerator(prefix: "replica-job"), clock: ManualClock())
        return [store!, SQLiteCommunityStore(database: database, push: CommunityPush(outbox: outbox))]
    }

    func testOneBookmarkOnTwoReplicasAtOnceNotifiesOnce() async throws {
        try await CommunityStoreContract.oneBookmarkOnTwoReplicasAtOnceNotifiesOnce(replicas)
        let pushes = try await database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM runtime_outbox") }
        XCTAssertEqual(pushes, 10, "one push job per notification")
    }

    func testOneCommentRetriedOnTwoReplicasAtOnceIsStoredOnce() async throws {
        try await CommunityStoreContract.oneCommentRetriedOnTwoReplicasAtOnceIsStoredOnce(replicas)
    }

    func testPicksReplacedOnTwoReplicasAtOnceAreOneList() async throws {
        try await CommunityStoreContract.picksReplacedOnTwoReplicasAtOnceAreOneList(replicas)
    }

    func testOneEventCreatedOnTwoReplicasAtOnceIsStoredOnce() async throws {
        try await CommunityStoreContract.oneEventCreatedOnTwoReplicasAtOnceIsStoredOnce(replicas)
    }

    func testAnEventDeletedOnOneReplicaWhileUsedOnTheOtherAnswersNotFound() async throws {
        try await CommunityStoreContract.anEventDeletedOnOneReplicaWhileUsedOnTheOtherAnswersNotFound(replicas)
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
