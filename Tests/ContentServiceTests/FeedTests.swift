import Foundation
import RPCCore
import RPCTestSupport
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

/// Feeds: newest first, keyset cursors that survive concurrent inserts, the following feed from
/// AccountService, the category filter, authors in one lookup per page and the caller's likes.
final class FeedTests: XCTestCase {
    func testAThousandPostsInPagesOfSevenWhilePostsAreAddedAreEachSeenOnce() async throws {
        // 250 posts per designer in a day: a test of paging, not of the posts.day quota.
        let fixture = try await ContentFixture.start(quotas: ["posts.day=100000"])
        var people: [ContentFixture.Person] = []
        for index in 0..<4 { people.append(try await fixture.designer("디자이너\(index)")) }
        var uploads: [String: YediCommon.ImageRef] = [:]
        for designer in people { uploads[designer.id] = try await fixture.upload(designer) }
        let designers = people
        let photos = uploads
        let store = fixture.store
        let base = fixture.clock.nowMilliseconds - 10_000_000
        var original: Set<String> = []
        for index in 0..<1_000 {
            let designer = designers[index % designers.count]
            // Three posts share each millisecond: ties are broken by id.
            let post = Self.record(
                id: "seed-\(index)", designer: designer.id, photo: photos[designer.id]!, at: base + Int64(index / 3))
            try await store.createPost(post)
            original.insert(post.id)
        }

        // While paging: new posts through the RPC (newest), and rows landing among the old ones (same
        // milliseconds as existing posts, as a skewed clock would make them).
        async let inserted = Self.insertWhilePaging(
            fixture: fixture, store: store, designers: designers, photos: photos, base: base)

        var seen: [String: Int] = [:]
        var cursor = ""
        var pages = 0
        var previous: (Int64, String)?
        repeat {
            let page = try await fixture.api.getFeed(.init(page: .init(cursor: cursor, limit: 7)))
            XCTAssertLessThanOrEqual(page.posts.count, 7)
            for post in page.posts {
                seen[post.id, default: 0] += 1
                if let previous {
                    XCTAssertTrue(
                        (post.createdAtMs, post.id) < previous, "newest first: \(post.id) after \(previous.1)")
                }
                previous = (post.createdAtMs, post.id)
            }
            cursor = page.page?.nextCursor ?? ""
            pages += 1
        } while !cursor.isEmpty && pages < 1_000
        let added = try await inserted

        XCTAssertEqual(added, 150)
        XCTAssertEqual(seen.values.filter { $0 > 1 }.count, 0, "a post was shown twice")
        let missed = original.filter { seen[$0] == nil }
        XCTAssertEqual(missed.count, 0, "posts that existed when paging began were skipped: \(missed.prefix(5))")
        XCTAssertGreaterThanOrEqual(pages, 143)
        try await fixture.stop()
    }

    func testPagesDefaultToThreeAreCappedAtFiftyAndRefuseBadCursors() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let photo = try await fixture.upload(designer)
        for index in 0..<60 {
            try await fixture.store.createPost(
                Self.record(id: "p\(index)", designer: designer.id, photo: photo, at: Int64(1_000 + index)))
        }
        let first = try await fixture.api.getFeed(.init())
        XCTAssertEqual(first.posts.map(\.id), ["p59", "p58", "p57"], "3 per page, newest first")
        let second = try await fixture.api.getFeed(.init(page: .init(cursor: first.page!.nextCursor)))
        XCTAssertEqual(second.posts.map(\.id), ["p56", "p55", "p54"])
        let capped = try await fixture.api.getFeed(.init(page: .init(limit: 500)))
        XCTAssertEqual(capped.posts.count, 50)
        let rest = try await fixture.api.getFeed(.init(page: .init(cursor: capped.page!.nextCursor, limit: 50)))
        XCTAssertEqual(rest.posts.count, 10)
        XCTAssertEqual(rest.page?.nextCursor, "", "the last page says there is no more")

        let customer = try await fixture.customer()
        let likesCursor = try await {
            _ = try await fixture.api.like(.init(postID: "p1"), options: customer.options)
            _ = try await fixture.api.like(.init(postID: "p2"), options: customer.options)
            return try await fixture.api.listLikedPosts(.init(page: .init(limit: 1)), options: customer.options)
                .page!.nextCursor
        }()
        let bad = ["garbage", "%%%", String(repeating: "A", count: 600), likesCursor]
        for cursor in bad {
            let code = await statusCode { _ = try await fixture.api.getFeed(.init(page: .init(cursor: cursor))) }
            XCTAssertEqual(code, .invalidArgument, "cursor \(cursor.prefix(20))")
        }
        let negative = await statusCode { _ = try await fixture.api.getFeed(.init(page: .init(limit: -1))) }
        XCTAssertEqual(negative, .invalidArgument)
        let scope = await statusCode { _ = try await fixture.api.getFeed(.init(scope: .init(rawValue: 7))) }
        XCTAssertEqual(scope, .invalidArgument)
        try await fixture.stop()
    }

    func testTheFollowingFeedTheCategoryFilterAndDesignerPages() async throws {
        let fixture = try await ContentFixture.start()
        let followed = try await fixture.designer("팔로우함")
        let stranger = try await fixture.designer("모르는사람")
        let customer = try await fixture.customer()
        _ = try await fixture.accounts.follow(.init(designerID: followed.id), options: customer.options)
        let cut = try await fixture.post(followed, title: "컷", category: .cut)
        fixture.clock.advance(by: 1)
        let perm = try await fixture.post(followed, title: "펌", category: .perm)
        fixture.clock.advance(by: 1)
        let strangers = try await fixture.post(stranger, title: "남의 컷", category: .cut)

        let following = try await fixture.api.getFeed(.init(scope: .following), options: customer.options)
        XCTAssertEqual(following.posts.map(\.id), [perm.id, cut.id])
        let everyone = try await fixture.api.getFeed(.init(scope: .all))
        XCTAssertEqual(everyone.posts.map(\.id), [strangers.id, perm.id, cut.id])
        let cuts = try await fixture.api.getFeed(.init(category: .cut))
        XCTAssertEqual(cuts.posts.map(\.id), [strangers.id, cut.id])
        let followedCuts = try await fixture.api.getFeed(
            .init(scope: .following, category: .cut), options: customer.options)
        XCTAssertEqual(followedCuts.posts.map(\.id), [cut.id])
        let designerPage = try await fixture.api.listDesignerPosts(.init(designerID: stranger.id))
        XCTAssertEqual(designerPage.posts.map(\.id), [strangers.id])

        let nobody = try await fixture.customer()
        let empty = try await fixture.api.getFeed(.init(scope: .following), options: nobody.options)
        XCTAssertTrue(empty.posts.isEmpty, "following nobody shows nothing")
        let anonymous = await statusCode { _ = try await fixture.api.getFeed(.init(scope: .following)) }
        XCTAssertEqual(anonymous, .unauthenticated)
        try await fixture.stop()
    }

    func testEachPageHasItsAuthorsFromOneLookupAndTheCallersLikes() async throws {
        let fixture = try await ContentFixture.start()
        let jiho = try await fixture.designer("박지호")
        let sora = try await fixture.designer("이소라")
        let customer = try await fixture.customer()
        var posts: [YediContent.Post] = []
        for index in 0..<6 {
            posts.append(try await fixture.post(index % 2 == 0 ? jiho : sora))
            fixture.clock.advance(by: 1)
        }
        _ = try await fixture.api.like(.init(postID: posts[5].id), options: customer.options)
        fixture.hooks.userLookups.withLock { $0 = [] }

        let page = try await fixture.api.getFeed(.init(page: .init(limit: 6)), options: customer.options)
        XCTAssertEqual(page.posts.map { $0.author?.name ?? "" }, ["이소라", "박지호", "이소라", "박지호", "이소라", "박지호"])
        XCTAssertEqual(page.posts.map(\.liked), [true, false, false, false, false, false])
        XCTAssertEqual(page.posts.map(\.likeCount), [1, 0, 0, 0, 0, 0])
        let lookups = fixture.hooks.userLookups.value
        XCTAssertLessThanOrEqual(lookups.count, 1, "one batched lookup for the page")
        XCTAssertTrue(lookups.allSatisfy { $0.count <= 2 }, "each author asked once: \(lookups)")

        let again = try await fixture.api.getFeed(.init(page: .init(limit: 6)))
        XCTAssertEqual(fixture.hooks.userLookups.value.count, lookups.count, "authors are cached briefly")
        XCTAssertEqual(again.posts.map(\.liked), [false, false, false, false, false, false], "anonymous likes nothing")

        fixture.clock.advance(by: 60)
        _ = try await fixture.api.getFeed(.init(page: .init(limit: 6)))
        XCTAssertEqual(fixture.hooks.userLookups.value.count, lookups.count + 1, "and asked again once stale")
        try await fixture.stop()
    }

    /// End to end: UpdateProfile at AccountService, its outbox delivers `yedi.runtime.Users/UserChanged`,
    /// ContentService's directory forgets the author, and the next read shows the new name; the clock
    /// never moves, so it is not the cache's lifetime running out.
    func testUserDirectoryShowsARenamedAuthorWithoutWaitingForItsLifetime() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer("박지호")
        let post = try await fixture.post(designer)
        let before = try await fixture.api.getPost(.init(postID: post.id))
        XCTAssertEqual(before.author?.name, "박지호")
        let lookups = fixture.hooks.userLookups.value.count
        _ = try await fixture.api.getPost(.init(postID: post.id))
        XCTAssertEqual(fixture.hooks.userLookups.value.count, lookups, "a hit does not ask AccountService")

        _ = try await fixture.accounts.updateProfile(
            .init(fields: ["name", "profile_image_id"], name: "박지호 원장", profileImageID: "img_new"),
            options: designer.options)
        let renamed = try await eventually(timeout: 20) {
            let author = try await fixture.api.getPost(.init(postID: post.id)).author
            return author?.name == "박지호 원장" && author?.profileImageID == "img_new"
        }
        XCTAssertTrue(renamed, "the new name shows once UserChanged arrives")
        try await fixture.stop()
    }

    /// A card shows the designer's shop and its area beside the name (no GetDesigner per card), and a
    /// moved shop shows once AccountService's UserChanged arrives.
    func testUserDirectoryPostCardsShowTheDesignersShop() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer("박지호")
        let post = try await fixture.post(designer)
        let profile = try await fixture.accounts.getDesigner(.init(designerID: designer.id))
        let shop = try XCTUnwrap(profile.shop)
        let card = try await fixture.api.getFeed(.init()).posts.first?.author
        XCTAssertEqual(card?.shopName, shop.name)
        XCTAssertEqual(card?.shopArea, "\(shop.address!.city) \(shop.address!.district)")

        var moved = shop
        moved.name = "살롱 드 지호"
        moved.address!.district = "마포구"
        _ = try await fixture.accounts.updateShop(.init(shop: moved), options: designer.options)
        let shown = try await eventually(timeout: 20) {
            let author = try await fixture.api.getPost(.init(postID: post.id)).author
            return author?.shopName == "살롱 드 지호" && author?.shopArea == "\(shop.address!.city) 마포구"
        }
        XCTAssertTrue(shown, "the moved shop shows once UserChanged arrives")
        try await fixture.stop()
    }

    /// RECOMMENDED ranks by recent likes; the first page pins the ranking, so a like given between two
    /// pages changes nothing for that reader (no post twice, none lost) and shows on a new first page.
    func testRecommendedFeedRanksRecentLikesAndItsPagesKeepOneSnapshot() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let old = try await fixture.post(designer, title: "예전 글")
        let mid = try await fixture.post(designer, title: "중간 글")
        let new = try await fixture.post(designer, title: "새 글")
        let fans = [try await fixture.customer(), try await fixture.customer(), try await fixture.customer()]
        _ = try await fixture.api.like(.init(postID: old.id), options: fans[0].options)
        _ = try await fixture.api.like(.init(postID: old.id), options: fans[1].options)
        _ = try await fixture.api.like(.init(postID: old.id), options: fans[2].options)
        fixture.clock.advance(by: 2 * 24 * 3_600)  // those three likes weigh 2 each now: 6
        func fresh(_ fan: ContentFixture.Person) throws -> CallOptions {  // the sign-up tokens have expired
            fixture.options(try fixture.harness.token(user: fan.id, role: .customer, now: fixture.clock.now))
        }
        _ = try await fixture.api.like(.init(postID: mid.id), options: try fresh(fans[0]))  // 4

        let first = try await fixture.api.getFeed(.init(scope: .recommended, page: .init(limit: 1)))
        XCTAssertEqual(first.posts.map(\.id), [old.id])
        let cursor = try XCTUnwrap(first.page?.nextCursor)
        fixture.clock.advance(by: 1)
        for fan in fans { _ = try await fixture.api.like(.init(postID: new.id), options: try fresh(fan)) }
        let rest = try await fixture.api.getFeed(.init(scope: .recommended, page: .init(cursor: cursor, limit: 5)))
        XCTAssertEqual(rest.posts.map(\.id), [mid.id], "the pinned ranking: the new likes are not in it")
        XCTAssertEqual(rest.page?.nextCursor ?? "", "")

        let again = try await fixture.api.getFeed(.init(scope: .recommended, page: .init(limit: 5)))
        XCTAssertEqual(again.posts.map(\.id), [new.id, old.id, mid.id])
        let newest = try await fixture.api.getFeed(.init(page: .init(limit: 1)))
        let wrongList = await rpcError {
            _ = try await fixture.api.getFeed(
                .init(scope: .recommended, page: .init(cursor: newest.page!.nextCursor, limit: 5)))
        }
        XCTAssertEqual(wrongList?.code, .invalidArgument, "a newest-feed cursor is not a recommended one")
        try await fixture.stop()
    }

    func testAPageIsServedWithoutAuthorsWhenAccountServiceIsDown() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let post = try await fixture.post(designer)
        fixture.clock.advance(by: 60)  // the author cached by CreatePost's answer is stale now
        try await fixture.account.stop()
        let page = try await fixture.api.getFeed(.init())
        XCTAssertEqual(page.posts.map(\.id), [post.id])
        XCTAssertEqual(page.posts.first?.author?.name ?? "", "")
        let following = await statusCode {
            _ = try await fixture.api.getFeed(.init(scope: .following), options: designer.options)
        }
        XCTAssertEqual(following, .unavailable, "the following feed cannot be made without the follows")
        fixture.accountClient.beginGracefulShutdown()
        fixture.contentClient.beginGracefulShutdown()
        try await fixture.content.stop()
        await fixture.booking.stop()
    }

    /// 150 posts while the test pages: half through CreatePost (the newest), half straight into the store at
    /// old instants (the same milliseconds as existing posts, as a skewed clock would make them).
    static func insertWhilePaging(
        fixture: ContentFixture, store: SQLiteContentStore, designers: [ContentFixture.Person],
        photos: [String: YediCommon.ImageRef], base: Int64
    ) async throws -> Int {
        var added = 0
        for index in 0..<150 {
            let designer = designers[index % designers.count]
            if index % 2 == 0 {
                _ = try await fixture.api.createPost(
                    .init(
                        title: "새 글 \(index)", description: "d", priceKRW: 1, category: .perm,
                        photoIDs: [photos[designer.id]!.id]), options: designer.options)
            } else {
                try await store.createPost(
                    record(
                        id: "late-\(index)", designer: designer.id, photo: photos[designer.id]!,
                        at: base + Int64((index * 7) % 333)))
            }
            added += 1
            await Task.yield()
        }
        return added
    }

    static func record(id: String, designer: String, photo: YediCommon.ImageRef, at milliseconds: Int64)
        -> PostRecord
    {
        PostRecord(
            id: id, designerID: designer, title: "글 \(id)", description: "설명", priceKRW: 10_000, category: 1,
            photos: [
                ImageRecord(
                    id: photo.id, ownerID: designer, sha256: "", contentType: "", width: 0, height: 0, byteCount: 0,
                    createdAtMilliseconds: 0)
            ], likeCount: 0, createdAtMilliseconds: milliseconds, updatedAtMilliseconds: milliseconds)
    }
}
