import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService
@testable import ContentService

/// Housetainer's `Community` over TLS on the fixture's manual clock: events and their display flag,
/// bad input, bookmarks, comments and the notifications they cause, blocks, paging.
final class HousetainerCommunityTests: HousetainerCommunityTestCase {
    func testHousetainerNewEventsAreShownToOthersOnlyOnceAnAdminDisplaysThem() async throws {
        let owner = try member("owner")
        let other = try member("other")
        let fields = try await fields(owner)
        let created = try await community.createEvent(.init(clientID: "c-1", fields: fields), options: owner)
        XCTAssertFalse(created.displayed)
        XCTAssertEqual(created.images.count, 1)
        XCTAssertFalse(try XCTUnwrap(created.images.first).url.isEmpty, "the large variant's URL")
        let retried = try await community.createEvent(.init(clientID: "c-1", fields: fields), options: owner)
        XCTAssertEqual(retried.id, created.id, "a retry with the same client id is the same event")

        let ongoing = YediHousetainer.ListEventsRequest(period: .ongoing)
        let eventIDs = try await community.listEvents(ongoing, options: owner).events.map(\.id)
        XCTAssertEqual(eventIDs, [created.id])
        let noEvents = try await community.listEvents(ongoing, options: other).events.isEmpty
        XCTAssertTrue(noEvents)
        let eventIDs2 = try await community.listEvents(ongoing, options: try admin).events.map(\.id)
        XCTAssertEqual(eventIDs2, [created.id])
        await assertRefused(.notFound, field: "event_id") {
            _ = try await self.community.getEvent(.init(eventID: created.id), options: other)
        }
        await assertRefused(.notFound, field: "event_id") {
            _ = try await self.community.updateEvent(.init(eventID: created.id, fields: fields), options: other)
        }
        await assertRefused(.permissionDenied, field: "") {
            _ = try await self.community.setEventDisplay(.init(eventID: created.id, displayed: true), options: owner)
        }

        _ = try await community.setEventDisplay(.init(eventID: created.id, displayed: true), options: try admin)
        let eventIDs3 = try await community.listEvents(ongoing, options: other).events.map(\.id)
        XCTAssertEqual(eventIDs3, [created.id])
        await assertRefused(.permissionDenied, field: "event_id") {
            _ = try await self.community.updateEvent(.init(eventID: created.id, fields: fields), options: other)
        }
        await assertRefused(.permissionDenied, field: "event_id") {
            _ = try await self.community.deleteEvent(.init(eventID: created.id), options: other)
        }
        var changed = fields
        changed.title = "  바뀐 제목 "
        changed.imageIDs = [try await upload(owner), fields.imageIDs[0]]
        let updated = try await community.updateEvent(.init(eventID: created.id, fields: changed), options: owner)
        XCTAssertEqual(updated.title, "바뀐 제목")
        XCTAssertEqual(updated.images.map(\.id), changed.imageIDs, "images kept in order")
        _ = try await community.deleteEvent(.init(eventID: created.id), options: owner)
        let noEvents2 = try await community.listEvents(ongoing, options: owner).events.isEmpty
        XCTAssertTrue(noEvents2)
    }

    func testHousetainerListsShowTheAuthorsNicknameAndTypeFromTheDirectory() async throws {
        try await enroll("owner", nickname: "집주인", type: "H")
        let event = try await displayedEvent(try member("owner"))
        XCTAssertEqual(event.owner?.nickname, "집주인")
        XCTAssertEqual(event.owner?.type, .housetainer)
        let comment = try await comment(event.id, "환영해요", by: try member("owner"))
        XCTAssertEqual(comment.writer?.nickname, "집주인")
    }

    func testHousetainerEventBadInputIsRefusedNamingTheField() async throws {
        let owner = try member("owner")
        let other = try member("other")
        let good = try await fields(owner)
        func create(_ change: (inout YediHousetainer.EventFields) -> Void) async throws {
            var fields = good
            change(&fields)
            _ = try await community.createEvent(.init(clientID: UUID().uuidString, fields: fields), options: owner)
        }
        await assertRefused(.invalidArgument, field: "image_ids") { try await create { $0.imageIDs = [] } }
        let eleven = try await (0..<11).asyncMap { _ in try await self.upload(owner) }
        await assertRefused(.invalidArgument, field: "image_ids") { try await create { $0.imageIDs = eleven } }
        await assertRefused(.invalidArgument, field: "schedule_type") {
            try await create { $0.scheduleType = .unspecified }
        }
        await assertRefused(.invalidArgument, field: "title") { try await create { $0.title = "   " } }
        await assertRefused(.invalidArgument, field: "link") { try await create { $0.link = "javascript:alert(1)" } }
        await assertRefused(.notFound, field: "image_ids") { try await create { $0.imageIDs = ["no-such-image"] } }
        let theirs = try await upload(other)
        await assertRefused(.permissionDenied, field: "image_ids") { try await create { $0.imageIDs = [theirs] } }
        await assertRefused(.invalidArgument, field: "client_id") {
            _ = try await self.community.createEvent(.init(clientID: "", fields: good), options: owner)
        }
    }

    func testHousetainerBookmarksNotifyTheOwnerOnceAndNeverTheBookmarker() async throws {
        let owner = try member("owner")
        let fan = try member("fan")
        let event = try await displayedEvent(owner)
        let changed = try await community.bookmark(.init(eventID: event.id), options: owner).changed
        XCTAssertTrue(changed)
        let noNotifications = try await notifications(owner).notifications.isEmpty
        XCTAssertTrue(noNotifications, "no notification to oneself")

        let community = self.community
        let results = try await (0..<50).concurrentMap { _ in
            try await community.bookmark(.init(eventID: event.id), options: fan).changed
        }
        XCTAssertEqual(results.filter { $0 }.count, 1, "50 concurrent bookmarks: one bookmark")
        let inbox = try await notifications(owner)
        XCTAssertEqual(inbox.notifications.map(\.type), [.eventBookmarked], "and one notification")
        XCTAssertEqual(inbox.notifications.first?.actorID, "fan")
        let bookmarked = try await community.getEvent(.init(eventID: event.id), options: fan).bookmarked
        XCTAssertTrue(bookmarked)
        let eventIDs = try await community.listMyBookmarks(.init(), options: fan).events.map(\.id)
        XCTAssertEqual(
            eventIDs, [event.id])
        let changed2 = try await community.unbookmark(.init(eventID: event.id), options: fan).changed
        XCTAssertTrue(changed2)
        let changed3 = try await community.unbookmark(.init(eventID: event.id), options: fan).changed
        XCTAssertFalse(changed3)
        let bookmarked2 = try await community.getEvent(.init(eventID: event.id), options: fan).bookmarked
        XCTAssertFalse(bookmarked2)
    }

    func testHousetainerCommentsNotifyEachRecipientOnceAndTheirNotificationsGoWithThem() async throws {
        let owner = try member("owner")
        let fan = try member("fan")
        let writer = try member("writer")
        let event = try await displayedEvent(owner)
        _ = try await community.bookmark(.init(eventID: event.id), options: owner)
        _ = try await community.bookmark(.init(eventID: event.id), options: fan)
        let first = try await comment(event.id, "좋아요", by: writer)
        let ownerInbox = try await notifications(owner)
        XCTAssertEqual(
            ownerInbox.notifications.map(\.type), [.eventCommented, .eventBookmarked],
            "an owner who bookmarked their own event gets one per comment")
        let types = try await notifications(fan).notifications.map(\.type)
        XCTAssertEqual(
            types, [.bookmarkedEventCommented])
        let noNotifications = try await notifications(writer).notifications.isEmpty
        XCTAssertTrue(noNotifications, "never the writer")
        _ = try await comment(event.id, "제가 주최해요", by: owner)
        let notificationCount = try await notifications(owner).notifications.count
        XCTAssertEqual(notificationCount, 2, "not for the owner's own comment")
        let notificationCount2 = try await notifications(fan).notifications.count
        XCTAssertEqual(notificationCount2, 2)

        await assertRefused(.invalidArgument, field: "content") {
            _ = try await self.comment(event.id, "   ", by: writer)
        }
        await assertRefused(.invalidArgument, field: "content") {
            _ = try await self.comment(event.id, String(repeating: "가", count: 1_001), by: writer)
        }
        _ = try await comment(event.id, String(repeating: "가", count: 1_000), by: writer)
        await assertRefused(.permissionDenied, field: "comment_id") {
            _ = try await self.community.deleteComment(.init(commentID: first.id), options: fan)
        }
        _ = try await community.deleteComment(.init(commentID: first.id), options: writer)
        let mentioned = try await notifications(fan).notifications.contains { $0.commentID == first.id }
        XCTAssertFalse(
            mentioned,
            "a deleted comment's notifications are gone")
        let mentioned2 = try await notifications(owner).notifications.contains { $0.commentID == first.id }
        XCTAssertFalse(mentioned2)
        let comments = try await community.listComments(
            .init(target: .init(target: .eventID(event.id))), options: fan)
        XCTAssertEqual(comments.comments.count, 2)
        XCTAssertEqual(comments.comments.last?.writerID, "owner", "newest first")
    }

    func testHousetainerABlockedMemberIsInNoListWhilePagesStayFull() async throws {
        try await enroll("pest")
        let me = try member("me")
        let pest = try member("pest")
        let friend = try member("friend")
        let now = fixture.clock.nowMilliseconds
        var friendEvents: [String] = []
        for index in 0..<6 {
            _ = try await displayedEvent(pest, at: now + Int64(index) * 60_000 + 1_000)
            friendEvents.append(try await displayedEvent(friend, at: now + Int64(index) * 60_000 + 2_000).id)
        }
        let mine = try await displayedEvent(me, at: now + 3_600_000)
        _ = try await comment(mine.id, "안녕", by: pest)
        _ = try await comment(mine.id, "반가워", by: friend)
        await assertRefused(.invalidArgument, field: "member_id") {
            _ = try await self.community.block(.init(memberID: "me"), options: me)
        }
        let changed = try await community.block(.init(memberID: "pest"), options: me).changed
        XCTAssertTrue(changed)
        let changed2 = try await community.block(.init(memberID: "pest"), options: me).changed
        XCTAssertFalse(changed2)

        let first = try await community.listEvents(.init(period: .ongoing, page: .init(limit: 4)), options: me)
        XCTAssertEqual(first.events.map(\.ownerID), ["friend", "friend", "friend", "friend"], "a full page")
        let second = try await community.listEvents(
            .init(period: .ongoing, page: .init(cursor: first.page?.nextCursor ?? "", limit: 4)), options: me)
        XCTAssertEqual(second.events.map(\.id), Array(friendEvents.suffix(2)) + [mine.id])
        let comments = try await community.listComments(.init(target: .init(target: .eventID(mine.id))), options: me)
        XCTAssertEqual(comments.comments.map(\.writerID), ["friend"])
        let actors = try await notifications(me).notifications.map(\.actorID)
        XCTAssertEqual(actors, ["friend"])
        let unreadCount = try await notifications(me).unreadCount
        XCTAssertEqual(unreadCount, 1)
        let noEvents = try await community.listMemberEvents(.init(memberID: "pest"), options: me).events.isEmpty
        XCTAssertTrue(noEvents)
        let eventCount = try await community.listMemberEvents(.init(memberID: "pest"), options: friend).events.count
        XCTAssertEqual(
            eventCount, 6)
        _ = try await community.unblock(.init(memberID: "pest"), options: me)
        let notificationCount = try await notifications(me).notifications.count
        XCTAssertEqual(notificationCount, 2)
    }

    func testHousetainerNotificationsPageByTenAndMarkReadUpToTheNewestShown() async throws {
        let owner = try member("owner")
        let writer = try member("writer")
        let event = try await displayedEvent(owner)
        for index in 0..<12 { _ = try await comment(event.id, "댓글 \(index)", by: writer) }
        let page = try await community.listNotifications(.init(), options: owner)
        XCTAssertEqual(page.notifications.count, 10)
        XCTAssertEqual(page.unreadCount, 12)
        let newest = try XCTUnwrap(page.notifications.first)
        let older = try XCTUnwrap(page.notifications.last)
        _ = try await comment(event.id, "새 댓글", by: writer)
        let marked = try await community.markNotificationsRead(.init(upToID: newest.id), options: owner)
        XCTAssertEqual(marked.unreadCount, 1, "the one that came after the page stays unread")
        let next = try await community.listNotifications(
            .init(page: .init(cursor: page.page?.nextCursor ?? "")), options: owner)
        XCTAssertEqual(next.notifications.count, 2)
        XCTAssertTrue(next.notifications.allSatisfy(\.read))
        XCTAssertLessThan(Int64(next.notifications[0].id)!, Int64(older.id)!)
        await assertRefused(.invalidArgument, field: "up_to_id") {
            _ = try await self.community.markNotificationsRead(.init(upToID: "x"), options: owner)
        }
    }

    func testHousetainerThousandEventsPagedBySevenDuringInsertsAreEachSeenOnce() async throws {
        let owner = try member("owner")
        let image = try await upload(owner)
        let store = SQLiteCommunityStore(database: fixture.content.environment.database)
        let now = fixture.clock.nowMilliseconds
        func seed(_ index: Int, at: Int64) async throws -> String {
            let event = try await store.createEvent(
                EventRecord(
                    id: "e-\(index)", app: "housetainer", ownerID: "owner", clientID: "c-\(index)", title: "이벤트",
                    scheduleType: 1, atMilliseconds: at, detail: "내용", link: "", imageIDs: [image],
                    createdAtMilliseconds: now, updatedAtMilliseconds: now))
            try await store.setDisplay(eventID: event.id, displayed: true, app: "housetainer", now: now)
            return event.id
        }
        var seeded: Set<String> = []
        for index in 0..<1_000 {
            // Several events share a time: the id breaks ties.
            seeded.insert(try await seed(index, at: now + 1_000 + Int64(index / 3) * 1_000))
        }
        var seen: [String] = []
        var cursor = ""
        var inserted = 1_000
        repeat {
            let page = try await community.listEvents(
                .init(period: .ongoing, page: .init(cursor: cursor, limit: 7)), options: owner)
            seen += page.events.map(\.id)
            cursor = page.page?.nextCursor ?? ""
            // Inserts between pages, before and after the cursor.
            _ = try await seed(inserted, at: now + 1_500)
            _ = try await seed(inserted + 1, at: now + 900_000)
            inserted += 2
        } while !cursor.isEmpty
        XCTAssertEqual(Set(seen).count, seen.count, "no event twice")
        XCTAssertTrue(seeded.isSubset(of: Set(seen)), "every event seeded before the first page")
    }
}

extension Sequence where Element: Sendable {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }

    func concurrentMap<T: Sendable>(_ transform: @escaping @Sendable (Element) async throws -> T) async throws -> [T] {
        try await withThrowingTaskGroup(of: T.self) { group in
            for element in self { group.addTask { try await transform(element) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }
}
