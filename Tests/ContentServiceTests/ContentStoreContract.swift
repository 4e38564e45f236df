import Foundation
import Logging
import RPCAccess
import RPCCore
import ServiceRuntime
import XCTest
import YediProto

@testable import ContentService

/// What every `ContentStore` must do, written against the protocol only: a second engine (PostgreSQL) gets a
/// test class like `SQLiteContentStoreTests` that hands its store to these same checks.
enum ContentStoreContract {
    static func image(_ id: String, owner: String, sha: String? = nil) -> ImageRecord {
        ImageRecord(
            id: id, ownerID: owner, sha256: sha ?? String(repeating: "a", count: 63) + String(id.last!),
            contentType: "image/png", width: 4, height: 3, byteCount: 100, createdAtMilliseconds: 1)
    }

    static func post(_ id: String, designer: String = "d1", photos: [ImageRecord], at time: Int64, category: Int = 1)
        -> PostRecord
    {
        PostRecord(
            id: id, designerID: designer, title: "t \(id)", description: "d", priceKRW: 1_000, category: category,
            photos: photos, likeCount: 0, createdAtMilliseconds: time, updatedAtMilliseconds: time)
    }

    static func review(
        _ id: String, reservation: String, designer: String, customer: String, score: Int, keywords: [Int],
        photos: [ImageRecord], at time: Int64 = 1
    ) -> ReviewRecord {
        ReviewRecord(
            id: id, reservationID: reservation, designerID: designer, customerID: customer, score: score, text: "글",
            photos: photos, keywords: keywords, createdAtMilliseconds: time)
    }

    static func postsRoundTripWithTheirPhotosInOrder(_ store: any ContentStore) async throws {
        let a = image("i1", owner: "d1")
        let b = image("i2", owner: "d1")
        try await store.insertImage(a)
        try await store.insertImage(b)
        let images = try await store.images(ids: ["i1", "i2", "missing"])
        XCTAssertEqual(Set(images.map(\.id)), ["i1", "i2"])
        XCTAssertEqual(images.first { $0.id == "i1" }, a)
        try await store.createPost(post("p1", photos: [b, a], at: 10))
        let loaded = try await store.post(id: "p1")
        XCTAssertEqual(loaded, post("p1", photos: [b, a], at: 10))
        var edited = post("p1", photos: [a], at: 10)
        edited.title = "new"
        edited.updatedAtMilliseconds = 20
        _ = try await store.like(postID: "p1", userID: "c1", app: .yedi, now: 15)
        try await store.updatePost(edited)
        let afterEdit = try await store.post(id: "p1")
        XCTAssertEqual(afterEdit?.title, "new")
        XCTAssertEqual(afterEdit?.photos, [a])
        XCTAssertEqual(afterEdit?.likeCount, 1, "an edit keeps the likes")
        XCTAssertEqual(afterEdit?.createdAtMilliseconds, 10)
        do {
            try await store.updatePost(post("missing", photos: [a], at: 1))
            XCTFail("updated a missing post")
        } catch let error as ContentStoreError {
            XCTAssertEqual(error, .notFound)
        }
        // A photo collected after the handler checked it: refused as gone, nothing stored half-way.
        do {
            try await store.createPost(post("p2", photos: [a, image("collected", owner: "d1")], at: 30))
            XCTFail("stored a post with a photo that is gone")
        } catch let error as ContentStoreError {
            XCTAssertEqual(error, .imageGone)
        }
        let halfStored = try await store.post(id: "p2")
        XCTAssertNil(halfStored)
        let deleted = try await store.deletePost(id: "p1")
        let deletedAgain = try await store.deletePost(id: "p1")
        XCTAssertEqual([deleted, deletedAgain], [true, false])
        let liked = try await store.likedPosts(userID: "c1", app: .yedi, after: nil, limit: 10)
        XCTAssertTrue(liked.isEmpty, "the post's likes went with it")
    }

    /// A page mixing posts with several photos, one, and none (PostgreSQL reads them in one statement, a
    /// row per photo): each post once, in the page's order, with its own photos in their order.
    static func pagesCarryEachPostsOwnPhotosInOrder(_ store: any ContentStore) async throws {
        let (a, b, c) = (image("i1", owner: "d1"), image("i2", owner: "d1"), image("i3", owner: "d1"))
        for photo in [a, b, c] { try await store.insertImage(photo) }
        try await store.createPost(post("p1", photos: [c, a, b], at: 30))
        try await store.createPost(post("p2", photos: [], at: 20))
        try await store.createPost(post("p3", photos: [a], at: 20))
        try await store.createPost(post("p4", photos: [b, c], at: 10))
        let expected = [
            post("p1", photos: [c, a, b], at: 30), post("p3", photos: [a], at: 20), post("p2", photos: [], at: 20),
            post("p4", photos: [b, c], at: 10),
        ]
        let page = try await store.posts(.everything, after: nil, limit: 10)
        XCTAssertEqual(page, expected, "newest first, ties by id descending, each with its photos")
        let first = try await store.posts(.everything, after: nil, limit: 2)
        XCTAssertEqual(first, Array(expected.prefix(2)), "the limit counts posts, not photos")
        let byID = try await store.posts(ids: ["p4", "p2", "p1"])
        XCTAssertEqual(
            byID.sorted { $0.id < $1.id }, [expected[0], expected[2], expected[3]], "by id: the same posts and photos")

        // Liked posts, recommendations and reviews read their photos the same way.
        for (time, id) in [(101, "p4"), (102, "p2"), (103, "p1")] {
            _ = try await store.like(postID: id, userID: "c1", app: .yedi, now: Int64(time))
        }
        let liked = try await store.likedPosts(userID: "c1", app: .yedi, after: nil, limit: 2)
        XCTAssertEqual(liked.map(\.0.id), ["p1", "p2"], "newest like first, the limit counts posts")
        XCTAssertEqual(liked.map(\.0.photos), [[c, a, b], []])
        XCTAssertEqual(liked.map(\.1), [ListPosition(key: 103, id: "p1"), ListPosition(key: 102, id: "p2")])
        let recommended = try await store.recommendedPosts(
            app: .yedi, category: nil, policy: .standard, snapshotAt: 200, after: nil, limit: 3)
        XCTAssertEqual(recommended.map(\.post.id), ["p4", "p2", "p1"], "equal scores: larger id first")
        XCTAssertEqual(recommended.map(\.post.photos), [[b, c], [], [c, a, b]])
        XCTAssertEqual(recommended.map(\.score), [4, 4, 4])
        let best = try await store.recommendedPosts(
            app: .yedi, category: nil, policy: .standard, snapshotAt: 200, after: nil, limit: 1)
        XCTAssertEqual(best.map(\.post.photos), [[b, c]], "the limit counts posts, not photos")
        let shot = image("i4", owner: "c1")
        try await store.insertImage(shot)
        try await store.createReview(
            review(
                "r1", reservation: "res1", designer: "d1", customer: "c1", score: 5, keywords: [3, 1],
                photos: [shot, a]))
        try await store.createReview(
            review("r2", reservation: "res2", designer: "d1", customer: "c1", score: 4, keywords: [], photos: [], at: 2)
        )
        let reviews = try await store.reviews(designerID: "d1", app: .yedi, after: nil, limit: 10)
        XCTAssertEqual(reviews.map(\.id), ["r2", "r1"])
        XCTAssertEqual(reviews.map(\.photos), [[], [shot, a]])
        XCTAssertEqual(reviews.map(\.keywords), [[], [3, 1]])
        let mine = try await store.reviews(
            customerID: "c1", app: .yedi, after: ListPosition(key: 2, id: "r2"), limit: 1)
        XCTAssertEqual(mine.map(\.photos), [[shot, a]], "the limit counts reviews, not photos")
    }

    static func feedsPageByTimeAndIdAndFilter(_ store: any ContentStore) async throws {
        let photo = image("i1", owner: "d1")
        try await store.insertImage(photo)
        for index in 0..<10 {
            try await store.createPost(
                post(
                    "p\(index)", designer: index % 2 == 0 ? "d1" : "d2", photos: [photo], at: Int64(index / 2),
                    category: index < 5 ? 1 : 2))
        }
        var seen: [String] = []
        var position: ListPosition?
        while true {
            let page = try await store.posts(.everything, after: position, limit: 3)
            guard let last = page.last else { break }
            seen += page.map(\.id)
            position = ListPosition(key: last.createdAtMilliseconds, id: last.id)
            // A row landing at an old time while paging: never inside pages already read.
            try await store.createPost(post("z\(seen.count)", photos: [photo], at: 0))
        }
        let expectedOrder = ["p9", "p8", "p7", "p6", "p5", "p4", "p3", "p2", "p1", "p0"]
        XCTAssertEqual(seen.filter { $0.hasPrefix("p") }, expectedOrder)
        XCTAssertEqual(Set(seen).count, seen.count, "no duplicates")
        let d2 = try await store.posts(PostFilter(designerIDs: ["d2"], category: nil), after: nil, limit: 50)
        XCTAssertEqual(d2.map(\.id), ["p9", "p7", "p5", "p3", "p1"])
        let nobody = try await store.posts(PostFilter(designerIDs: [], category: nil), after: nil, limit: 50)
        XCTAssertTrue(nobody.isEmpty)
        let quoted = try await store.posts(
            PostFilter(designerIDs: ["d\"1", "d2\\"], category: nil), after: nil, limit: 50)
        XCTAssertTrue(quoted.isEmpty, "odd ids are matched literally")
        let category = try await store.posts(PostFilter(designerIDs: ["d1"], category: 2), after: nil, limit: 50)
        XCTAssertEqual(category.map(\.id), ["p8", "p6"])
        let previews = try await store.posts(ids: ["p1", "missing", "p2"])
        XCTAssertEqual(Set(previews.map(\.id)), ["p1", "p2"])
    }

    static func likesAreIdempotentAndExact(_ store: any ContentStore) async throws {
        let photo = image("i1", owner: "d1")
        try await store.insertImage(photo)
        try await store.createPost(post("p1", photos: [photo], at: 1))
        try await store.createPost(post("p2", photos: [photo], at: 2))
        let counts = [
            try await store.like(postID: "p1", userID: "c1", app: .yedi, now: 10),
            try await store.like(postID: "p1", userID: "c1", app: .yedi, now: 11),
            try await store.like(postID: "p1", userID: "c2", app: .yedi, now: 12),
            try await store.unlike(postID: "p1", userID: "c2", app: .yedi),
            try await store.unlike(postID: "p1", userID: "c2", app: .yedi),
        ]
        XCTAssertEqual(counts, [1, 1, 2, 1, 1])
        _ = try await store.like(postID: "p2", userID: "c1", app: .yedi, now: 20)
        let liked = try await store.likedPosts(userID: "c1", app: .yedi, after: nil, limit: 10)
        XCTAssertEqual(liked.map(\.0.id), ["p2", "p1"], "newest like first")
        XCTAssertEqual(
            liked.map(\.1), [ListPosition(key: 20, id: "p2"), ListPosition(key: 10, id: "p1")])
        let after = try await store.likedPosts(userID: "c1", app: .yedi, after: liked[0].1, limit: 10)
        XCTAssertEqual(after.map(\.0.id), ["p1"])
        let which = try await store.likedPostIDs(userID: "c1", among: ["p1", "p2", "p3"])
        XCTAssertEqual(which, ["p1", "p2"])
        do {
            _ = try await store.like(postID: "missing", userID: "c1", app: .yedi, now: 1)
            XCTFail("liked a missing post")
        } catch let error as ContentStoreError {
            XCTAssertEqual(error, .notFound)
        }
    }

    static func reviewsKeepTheirSummaryExact(_ store: any ContentStore) async throws {
        let photo = image("i1", owner: "c1")
        try await store.insertImage(photo)
        try await store.createReview(
            review(
                "r1", reservation: "res1", designer: "d1", customer: "c1", score: 5, keywords: [10, 2], photos: [photo])
        )
        try await store.createReview(
            review(
                "r2", reservation: "res2", designer: "d1", customer: "c1", score: 2, keywords: [10], photos: [photo],
                at: 2))
        do {
            try await store.createReview(
                review(
                    "r3", reservation: "res1", designer: "d1", customer: "c1", score: 1, keywords: [1], photos: [photo])
            )
            XCTFail("a second review of one reservation")
        } catch let error as ContentStoreError {
            XCTAssertEqual(error, .alreadyReviewed)
        }
        let summaries = try await store.reviewSummaries(designerIDs: ["d1", "d2"])
        XCTAssertEqual(
            summaries,
            [
                ReviewSummaryRecord(designerID: "d1", reviewCount: 2, scoreTotal: 7, keywordCounts: [10: 2, 2: 1]),
                .empty("d2"),
            ])
        XCTAssertEqual(summaries[0].average, 3.5)
        let byDesigner = try await store.reviews(designerID: "d1", app: .yedi, after: nil, limit: 1)
        XCTAssertEqual(byDesigner.map(\.id), ["r2"])
        XCTAssertEqual(byDesigner.first?.photos, [photo])
        XCTAssertEqual(byDesigner.first?.keywords, [10])
        let next = try await store.reviews(
            designerID: "d1", app: .yedi, after: ListPosition(key: 2, id: "r2"), limit: 5)
        XCTAssertEqual(next.map(\.keywords), [[10, 2]], "keywords in the order given")
        let mine = try await store.reviews(customerID: "c1", app: .yedi, after: nil, limit: 5)
        XCTAssertEqual(mine.map(\.id), ["r2", "r1"])
    }

    /// RECOMMENDED: likes of the window before the snapshot, weighed by age (4 / 2 / 1), none after the
    /// snapshot or before the window; best score first, larger id on a tie; paged by (score, id).
    static func recommendationsRankRecentLikesUpToTheSnapshot(_ store: any ContentStore) async throws {
        let photo = image("i1", owner: "d1")
        try await store.insertImage(photo)
        for (id, category) in [("p1", 1), ("p2", 1), ("p3", 2), ("p4", 1), ("p5", 1)] {
            try await store.createPost(post(id, photos: [photo], at: 1, category: category))
        }
        let hour: Int64 = 3_600_000
        let snapshot: Int64 = 30 * 24 * hour
        let likes: [(String, String, Int64)] = [
            ("p1", "u1", snapshot - 1 * hour),  // 4
            ("p2", "u1", snapshot - 30 * hour), ("p2", "u2", snapshot - 100 * hour),  // 2 + 1
            ("p3", "u1", snapshot - 2 * hour),  // 4, another category
            ("p4", "u1", snapshot - 8 * 24 * hour),  // outside the window
            ("p5", "u1", snapshot + 1),  // after the snapshot
            ("p5", "u2", snapshot - 160 * hour),  // 1
        ]
        for (post, user, time) in likes { _ = try await store.like(postID: post, userID: user, app: .yedi, now: time) }
        let all = try await store.recommendedPosts(
            app: .yedi, category: nil, policy: .standard, snapshotAt: snapshot, after: nil, limit: 10)
        XCTAssertEqual(all.map(\.post.id), ["p3", "p1", "p2", "p5"], "ties go to the larger id")
        XCTAssertEqual(all.map(\.score), [4, 4, 3, 1])
        let cuts = try await store.recommendedPosts(
            app: .yedi, category: 1, policy: .standard, snapshotAt: snapshot, after: nil, limit: 1)
        XCTAssertEqual(cuts.map(\.post.id), ["p1"])
        let next = try await store.recommendedPosts(
            app: .yedi, category: 1, policy: .standard, snapshotAt: snapshot, after: PagePosition(key: 4, id: "p1"),
            limit: 5)
        XCTAssertEqual(next.map(\.post.id), ["p2", "p5"])
        let later = try await store.recommendedPosts(
            app: .yedi, category: nil, policy: .standard, snapshotAt: snapshot + 2, after: nil, limit: 10)
        XCTAssertEqual(later.first { $0.post.id == "p5" }?.score, 5, "a later snapshot counts the later like")
    }

    /// An operator's hide or feature changes only content of their app, once; hidden posts leave every
    /// list and hidden reviews the summary; the FEATURED list goes by featuring time.
    static func moderationHidesAndFeaturesWithinTheApp(_ store: any ContentStore) async throws {
        let photo = image("i1", owner: "d1")
        try await store.insertImage(photo)
        for (id, time) in [("p1", Int64(1)), ("p2", 2), ("p3", 3)] {
            try await store.createPost(post(id, photos: [photo], at: time))
        }
        try await store.createReview(
            review("r1", reservation: "res1", designer: "d1", customer: "c1", score: 4, keywords: [1], photos: []))
        func change(
            _ kind: ContentModerationChange.Kind, _ id: String, _ action: ContentModerationChange.Action,
            app: AppID = .yedi, at time: Int64 = 10
        ) async throws -> Bool {
            try await store.moderate(
                ContentModerationChange(kind: kind, id: id, app: app, action: action, atMilliseconds: time),
                log: YediModeration.RecordOperatorActionRequest(app: app.rawValue, id: "log-\(id)-\(time)"))
        }
        do {
            _ = try await change(.post, "p1", .hide, app: "slp")
            XCTFail("an SLP operator hid a YeDi post")
        } catch let error as ContentStoreError {
            XCTAssertEqual(error, .notFound)
        }
        let hid = try await change(.post, "p1", .hide)
        XCTAssertTrue(hid)
        let again = try await change(.post, "p1", .hide)
        XCTAssertFalse(again)
        let feed = try await store.posts(.everything, after: nil, limit: 10)
        XCTAssertEqual(feed.map(\.id), ["p3", "p2"])
        let opened = try await store.post(id: "p1")
        XCTAssertNotNil(opened?.hiddenAtMilliseconds, "a hidden post is kept, marked")
        _ = try await change(.post, "p2", .feature, at: 20)
        _ = try await change(.post, "p3", .feature, at: 30)
        var featured = PostFilter.everything
        featured.featuredOnly = true
        let first = try await store.posts(featured, after: nil, limit: 1)
        XCTAssertEqual(first.map(\.id), ["p3"])
        let rest = try await store.posts(featured, after: ListPosition(key: 30, id: "p3"), limit: 5)
        XCTAssertEqual(rest.map(\.id), ["p2"], "paged by featuring time")
        _ = try await change(.review, "r1", .hide)
        let summary = try await store.reviewSummaries(designerIDs: ["d1"])
        XCTAssertEqual(summary, [.empty("d1")])
        let listed = try await store.reviews(designerID: "d1", app: .yedi, after: nil, limit: 5)
        XCTAssertTrue(listed.isEmpty)
        let mine = try await store.reviews(customerID: "c1", app: .yedi, after: nil, limit: 5)
        XCTAssertNotNil(mine.first?.hiddenAtMilliseconds)
        _ = try await change(.review, "r1", .show)
        let restored = try await store.reviewSummaries(designerIDs: ["d1"])
        XCTAssertEqual(restored.first?.reviewCount, 1)
    }

    /// Unreferenced = no post, no review, not pinned; paged oldest first; a delete re-checks and lists the
    /// blobs; an upload over its quota is refused and its blob listed.
    static func unreferencedImagesAreFoundDeletedAndQuotasHold(_ store: any ContentStore) async throws {
        let images = (1...5).map { image("i\($0)", owner: "u1") }
        for record in images { try await store.insertImage(record) }
        try await store.createPost(post("p1", photos: [images[0]], at: 1))
        try await store.createReview(
            review(
                "r1", reservation: "res1", designer: "d1", customer: "u1", score: 5, keywords: [1], photos: [images[1]])
        )
        try await store.pinImages(ids: ["i3"], now: 2)
        let first = try await store.unreferencedImages(createdBefore: 2, after: nil, limit: 1)
        XCTAssertEqual(first.map(\.id), ["i4"])
        let next = try await store.unreferencedImages(createdBefore: 2, after: first.last, limit: 10)
        XCTAssertEqual(next.map(\.id), ["i5"])
        let young = try await store.unreferencedImages(createdBefore: 1, after: nil, limit: 10)
        XCTAssertEqual(young, [], "within the grace period")
        let deleted = try await store.deleteUnreferencedImages(ids: ["i1", "i3", "i4"], createdBefore: 2)
        XCTAssertEqual(deleted, ["i4"], "used and pinned images stay")
        let blobs = LockedNames()
        _ = try await store.collectUnreferencedBlobs { blobs.append($0) }
        XCTAssertEqual(blobs.names, [images[3].sha256])

        let quotas = UploadQuotas(
            perDay: Quota(name: "uploads.day-bytes", limit: 1_000, counted: "bytes"),
            total: Quota(name: "uploads.total-bytes", limit: 450, counted: "bytes"))
        let over = image("i6", owner: "u1", sha: String(repeating: "f", count: 64))
        do {
            try await store.insertImage(over, quotas: quotas)
            XCTFail("a fifth 100-byte image passed a 450-byte total")
        } catch {
            XCTAssertEqual(error as? QuotaExceeded, QuotaExceeded(quota: quotas.total))
        }
        let refused = LockedNames()
        _ = try await store.collectUnreferencedBlobs { refused.append($0) }
        XCTAssertEqual(refused.names, [over.sha256], "the refused upload's blob is listed")
        try await store.insertImage(image("i7", owner: "u2"), quotas: quotas)
    }

    static func purgeRemovesTheUserAndListsOnlyUnreferencedBlobs(_ store: any ContentStore) async throws {
        let own = image("i1", owner: "c1", sha: String(repeating: "1", count: 64))
        let shared = image("i2", owner: "c1", sha: String(repeating: "2", count: 64))
        let othersCopy = image("i3", owner: "c2", sha: String(repeating: "2", count: 64))
        let designerPhoto = image("i4", owner: "d1", sha: String(repeating: "4", count: 64))
        for record in [own, shared, othersCopy, designerPhoto] { try await store.insertImage(record) }
        try await store.createPost(post("p1", designer: "d1", photos: [designerPhoto], at: 1))
        _ = try await store.like(postID: "p1", userID: "c1", app: .yedi, now: 2)
        _ = try await store.like(postID: "p1", userID: "c2", app: .yedi, now: 3)
        try await store.createReview(
            review("r1", reservation: "res1", designer: "d1", customer: "c1", score: 1, keywords: [3], photos: [own]))
        try await store.createReview(
            review(
                "r2", reservation: "res2", designer: "d1", customer: "c2", score: 5, keywords: [3, 4],
                photos: [othersCopy]))

        let outcome = try await store.purgeUser("c1", delivery: nil, now: 10)
        XCTAssertEqual(Set(outcome.removedImageIDs), ["i1", "i2"])
        let again = try await store.purgeUser("c1", delivery: nil, now: 11)
        XCTAssertEqual(again.removedImageIDs, [], "a second purge finds nothing")
        let post = try await store.post(id: "p1")
        XCTAssertEqual(post?.likeCount, 1)
        let summary = try await store.reviewSummaries(designerIDs: ["d1"])
        XCTAssertEqual(
            summary,
            [ReviewSummaryRecord(designerID: "d1", reviewCount: 1, scoreTotal: 5, keywordCounts: [3: 1, 4: 1])])
        let images = try await store.images(ids: ["i1", "i2", "i3", "i4"])
        XCTAssertEqual(Set(images.map(\.id)), ["i3", "i4"])
        let deleted = LockedNames()
        let count = try await store.collectUnreferencedBlobs { deleted.append($0) }
        XCTAssertEqual(count, 1)
        XCTAssertEqual(deleted.names, [String(repeating: "1", count: 64)], "the shared blob stays")
        let none = try await store.collectUnreferencedBlobs { deleted.append($0) }
        XCTAssertEqual(none, 0)

        // A blob listed for deletion that a new upload names again is kept.
        try await store.insertImage(image("i5", owner: "c3", sha: String(repeating: "5", count: 64)))
        _ = try await store.purgeUser("c3", delivery: nil, now: 12)
        try await store.insertImage(image("i6", owner: "c4", sha: String(repeating: "5", count: 64)))
        let reclaimed = try await store.collectUnreferencedBlobs { deleted.append($0) }
        XCTAssertEqual(reclaimed, 0, "the blob is wanted again")

        _ = try await store.purgeUser("d1", delivery: nil, now: 12)
        let posts = try await store.posts(.everything, after: nil, limit: 10)
        XCTAssertTrue(posts.isEmpty)
        let reviews = try await store.reviews(designerID: "d1", app: .yedi, after: nil, limit: 10)
        XCTAssertTrue(reviews.isEmpty, "reviews about a deleted designer go too")
        let gone = try await store.reviewSummaries(designerIDs: ["d1"])
        XCTAssertEqual(gone, [.empty("d1")])
    }
}

extension ContentStoreContract {
    /// Apps as tenants: every row keeps its app, and no list, like or lookup by app reaches another app's.
    static func tenantRowsStayInTheirApp(_ store: any ContentStore) async throws {
        var theirs = image("i9", owner: "z1")
        theirs.app = "zipadoo"
        try await store.insertImage(theirs)
        try await store.insertImage(image("i1", owner: "d1"))
        let images = try await store.images(ids: ["i1", "i9"])
        XCTAssertEqual(
            Dictionary(uniqueKeysWithValues: images.map { ($0.id, $0.app) }), ["i1": .yedi, "i9": "zipadoo"])

        try await store.createPost(post("p1", photos: [], at: 10))
        var other = post("p2", designer: "z1", photos: [], at: 20)
        other.app = "zipadoo"
        try await store.createPost(other)
        let stored = try await store.post(id: "p2")
        XCTAssertEqual(stored?.app, "zipadoo")
        let yediFeed = try await store.posts(PostFilter(app: .yedi), after: nil, limit: 10)
        XCTAssertEqual(yediFeed.map(\.id), ["p1"])
        let theirFeed = try await store.posts(PostFilter(app: "zipadoo"), after: nil, limit: 10)
        XCTAssertEqual(theirFeed.map(\.id), ["p2"])
        let byDesigner = try await store.posts(PostFilter(app: .yedi, designerIDs: ["z1"]), after: nil, limit: 10)
        XCTAssertEqual(byDesigner, [], "another app's designer has no posts here")

        do {
            _ = try await store.like(postID: "p2", userID: "c1", app: .yedi, now: 30)
            XCTFail("a YeDi like of another app's post must fail")
        } catch ContentStoreError.notFound {}
        do {
            _ = try await store.unlike(postID: "p2", userID: "c1", app: .yedi)
            XCTFail("a YeDi unlike of another app's post must fail")
        } catch ContentStoreError.notFound {}
        _ = try await store.like(postID: "p1", userID: "c1", app: .yedi, now: 30)
        _ = try await store.like(postID: "p2", userID: "c1", app: "zipadoo", now: 31)
        let likedHere = try await store.likedPosts(userID: "c1", app: .yedi, after: nil, limit: 10)
        XCTAssertEqual(likedHere.map(\.0.id), ["p1"])
        let ranked = try await store.recommendedPosts(
            app: .yedi, category: nil, policy: .standard, snapshotAt: 40, after: nil, limit: 10)
        XCTAssertEqual(ranked.map(\.post.id), ["p1"], "another app's likes rank nothing here")

        var review = review(
            "r9", reservation: "z-res", designer: "z1", customer: "c9", score: 5, keywords: [], photos: [])
        review.app = "zipadoo"
        try await store.createReview(review)
        let yediReviews = try await store.reviews(designerID: "z1", app: .yedi, after: nil, limit: 10)
        XCTAssertEqual(yediReviews, [])
        let theirReviews = try await store.reviews(customerID: "c9", app: "zipadoo", after: nil, limit: 10)
        XCTAssertEqual(theirReviews.map(\.app), ["zipadoo"])
    }
}

final class LockedNames: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ name: String) { lock.withLock { stored.append(name) } }
    var names: [String] { lock.withLock { stored } }
}

/// The contract on SQLite.
// MARK: Replicas: several stores on one database, as several processes have

extension ContentStoreContract {
    /// 20 members like one post at once, spread over the replicas: every like counts.
    static func likesOfOnePostByManyMembersOnReplicasAllCount(_ stores: [any ContentStore]) async throws {
        let store = stores[0]
        try await store.createPost(post("p1", photos: [], at: 1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    _ = try await stores[index % stores.count].like(
                        postID: "p1", userID: "u\(index)", app: .yedi, now: 2)
                }
            }
            try await group.waitForAll()
        }
        let post = try await store.post(id: "p1")
        XCTAssertEqual(post?.likeCount, 20)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    _ = try await stores[index % stores.count].unlike(postID: "p1", userID: "u\(index)", app: .yedi)
                }
            }
            try await group.waitForAll()
        }
        let after = try await store.post(id: "p1")
        XCTAssertEqual(after?.likeCount, 0)
    }

    /// One member likes (then unlikes) one post on both replicas at once, round after round: counted once.
    static func theSameMemberLikingOnTwoReplicasAtOnceCountsOnce(_ stores: [any ContentStore]) async throws {
        let store = stores[0]
        for round in 0..<10 {
            let postID = "p\(round)"
            try await store.createPost(post(postID, photos: [], at: 1))
            let liked = try await both(stores) {
                try await $0.like(postID: postID, userID: "u", app: .yedi, now: 2)
            }
            XCTAssertEqual(liked, [1, 1], "round \(round)")
            let unliked = try await both(stores) { try await $0.unlike(postID: postID, userID: "u", app: .yedi) }
            XCTAssertEqual(unliked, [0, 0], "round \(round)")
        }
    }

    /// 20 posts by one designer at once on the replicas, 5 a day allowed: exactly 5; likewise reviews of
    /// one customer and uploads of one owner against their byte total.
    static func quotasAtTheirLimitOnReplicasAdmitExactlyTheLimit(_ stores: [any ContentStore]) async throws {
        let posts = Quota(name: "posts.day", limit: 5, counted: "posts per day")
        let madePosts = try await admitted(20) { index in
            try await stores[index % stores.count].createPost(
                post("p\(index)", photos: [], at: 1_000), quota: posts)
        }
        XCTAssertEqual(madePosts, 5)
        let reviews = Quota(name: "reviews.day", limit: 3, counted: "reviews per day")
        let madeReviews = try await admitted(20) { index in
            try await stores[index % stores.count].createReview(
                review(
                    "r\(index)", reservation: "res\(index)", designer: "d\(index % 3)", customer: "c1", score: 4,
                    keywords: [1], photos: []),
                quota: reviews)
        }
        XCTAssertEqual(madeReviews, 3)
        let bytes = UploadQuotas(
            perDay: Quota(name: "uploads.day-bytes", limit: 10_000, counted: "bytes"),
            total: Quota(name: "uploads.total-bytes", limit: 450, counted: "bytes"))
        let uploaded = try await admitted(20) { index in
            try await stores[index % stores.count].insertImage(
                image("i\(index)", owner: "u1"), quotas: bytes)
        }
        XCTAssertEqual(uploaded, 4)
    }

    /// The same PurgeUser delivered to both replicas at once: one is the first delivery.
    static func aPurgeDeliveredToTwoReplicasAtOnceIsFirstOnce(_ stores: [any ContentStore]) async throws {
        for round in 0..<10 {
            let delivery = Delivery(key: "account/job-\(round)", method: "yedi.content.Content/PurgeUser")
            let outcomes = try await both(stores) {
                try await $0.purgeUser("u\(round)", delivery: delivery, now: 1).firstDelivery
            }
            XCTAssertEqual(outcomes.filter { $0 }.count, 1, "round \(round): \(outcomes)")
        }
    }

    /// `call` on the first two stores at once; the answers in the stores' order.
    static func both<T: Sendable>(
        _ stores: [any ContentStore], _ call: @escaping @Sendable (any ContentStore) async throws -> T
    ) async throws -> [T] {
        async let first = call(stores[0])
        async let second = call(stores[1])
        return try await [first, second]
    }

    /// How many of `count` calls at once passed their quota (the others refused with `QuotaExceeded`).
    static func admitted(_ count: Int, _ call: @escaping @Sendable (Int) async throws -> Void) async throws -> Int {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<count {
                group.addTask {
                    do {
                        try await call(index)
                        return true
                    } catch is QuotaExceeded {
                        return false
                    }
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
    }
}

final class SQLiteContentStoreTests: XCTestCase {
    private func makeStore() throws -> any ContentStore {
        try makeReplicas(1)[0]
    }

    /// `count` stores on one new database, as replicas would have (SQLite has one writer: they take turns).
    private func makeReplicas(_ count: Int) throws -> [any ContentStore] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("content-store-\(UUID())").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "test.content-store")
        logger.logLevel = .warning
        let database = try ServiceDatabase.open(
            directory: directory, name: "content", migrations: ContentServiceDefinition.migrate, logger: logger)
        return (0..<count).map { replica in
            SQLiteContentStore(
                database: database,
                outbox: Outbox(ids: SequentialIDGenerator(prefix: "job-\(replica)-"), clock: ManualClock()))
        }
    }

    func testLikesOfOnePostByManyMembersOnReplicasAllCount() async throws {
        try await ContentStoreContract.likesOfOnePostByManyMembersOnReplicasAllCount(try makeReplicas(3))
    }

    func testTheSameMemberLikingOnTwoReplicasAtOnceCountsOnce() async throws {
        try await ContentStoreContract.theSameMemberLikingOnTwoReplicasAtOnceCountsOnce(try makeReplicas(3))
    }

    func testQuotasAtTheirLimitOnReplicasAdmitExactlyTheLimit() async throws {
        try await ContentStoreContract.quotasAtTheirLimitOnReplicasAdmitExactlyTheLimit(try makeReplicas(3))
    }

    func testAPurgeDeliveredToTwoReplicasAtOnceIsFirstOnce() async throws {
        try await ContentStoreContract.aPurgeDeliveredToTwoReplicasAtOnceIsFirstOnce(try makeReplicas(3))
    }

    func testPostsRoundTripWithTheirPhotosInOrder() async throws {
        try await ContentStoreContract.postsRoundTripWithTheirPhotosInOrder(try makeStore())
    }

    func testPagesCarryEachPostsOwnPhotosInOrder() async throws {
        try await ContentStoreContract.pagesCarryEachPostsOwnPhotosInOrder(try makeStore())
    }

    func testTenantRowsStayInTheirApp() async throws {
        try await ContentStoreContract.tenantRowsStayInTheirApp(try makeStore())
    }

    func testRecommendationsRankRecentLikesUpToTheSnapshot() async throws {
        try await ContentStoreContract.recommendationsRankRecentLikesUpToTheSnapshot(try makeStore())
    }

    func testModerationHidesAndFeaturesWithinTheApp() async throws {
        try await ContentStoreContract.moderationHidesAndFeaturesWithinTheApp(try makeStore())
    }

    func testFeedsPageByTimeAndIdAndFilter() async throws {
        try await ContentStoreContract.feedsPageByTimeAndIdAndFilter(try makeStore())
    }

    func testLikesAreIdempotentAndExact() async throws {
        try await ContentStoreContract.likesAreIdempotentAndExact(try makeStore())
    }

    func testReviewsKeepTheirSummaryExact() async throws {
        try await ContentStoreContract.reviewsKeepTheirSummaryExact(try makeStore())
    }

    func testUnreferencedImagesAreFoundDeletedAndQuotasHold() async throws {
        try await ContentStoreContract.unreferencedImagesAreFoundDeletedAndQuotasHold(try makeStore())
    }

    func testPurgeRemovesTheUserAndListsOnlyUnreferencedBlobs() async throws {
        try await ContentStoreContract.purgeRemovesTheUserAndListsOnlyUnreferencedBlobs(try makeStore())
    }
}
