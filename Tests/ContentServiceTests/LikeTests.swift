import RPCCore
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

/// Like and Unlike are two idempotent calls (a retried toggle would flip twice); counts stay exact.
final class LikeTests: XCTestCase {
    func testLikesAreIdempotentAndCountedExactly() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let post = try await fixture.post(designer)
        let minji = try await fixture.customer()
        let sora = try await fixture.customer()

        let first = try await fixture.api.like(.init(postID: post.id), options: minji.options)
        let retried = try await fixture.api.like(.init(postID: post.id), options: minji.options)
        XCTAssertEqual(first, .init(liked: true, likeCount: 1))
        XCTAssertEqual(retried, .init(liked: true, likeCount: 1), "liking twice is one like")
        let other = try await fixture.api.like(.init(postID: post.id), options: sora.options)
        XCTAssertEqual(other.likeCount, 2)
        let unliked = try await fixture.api.unlike(.init(postID: post.id), options: minji.options)
        let unlikedAgain = try await fixture.api.unlike(.init(postID: post.id), options: minji.options)
        XCTAssertEqual(unliked, .init(liked: false, likeCount: 1))
        XCTAssertEqual(unlikedAgain, .init(liked: false, likeCount: 1), "unliking twice is one unlike")
        let seen = try await fixture.api.getPost(.init(postID: post.id), options: sora.options)
        XCTAssertEqual(seen.likeCount, 1)
        XCTAssertTrue(seen.liked)

        // Many at once from one customer: still one like.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<10 {
                group.addTask { _ = try await fixture.api.like(.init(postID: post.id), options: minji.options) }
            }
            try await group.waitForAll()
        }
        let after = try await fixture.api.getPost(.init(postID: post.id))
        XCTAssertEqual(after.likeCount, 2)
        try await fixture.stop()
    }

    func testRefusals() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let post = try await fixture.post(designer)
        let customer = try await fixture.customer()
        let byDesigner = await statusCode {
            _ = try await fixture.api.like(.init(postID: post.id), options: designer.options)
        }
        XCTAssertEqual(byDesigner, .permissionDenied, "likes are the customers'")
        let anonymous = await statusCode { _ = try await fixture.api.like(.init(postID: post.id)) }
        XCTAssertEqual(anonymous, .unauthenticated)
        let missing = await statusCode {
            _ = try await fixture.api.like(.init(postID: "nope"), options: customer.options)
        }
        XCTAssertEqual(missing, .notFound)
        let missingUnlike = await statusCode {
            _ = try await fixture.api.unlike(.init(postID: "nope"), options: customer.options)
        }
        XCTAssertEqual(missingUnlike, .notFound)
        let empty = await statusCode { _ = try await fixture.api.like(.init(), options: customer.options) }
        XCTAssertEqual(empty, .invalidArgument)
        try await fixture.stop()
    }

    func testMyLikedPostsNewestLikeFirstInPages() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let customer = try await fixture.customer()
        var posts: [YediContent.Post] = []
        for _ in 0..<5 {
            posts.append(try await fixture.post(designer))
            fixture.clock.advance(by: 1)
        }
        // Liked in an order unlike the posting order.
        for index in [2, 0, 4, 1] {
            _ = try await fixture.api.like(.init(postID: posts[index].id), options: customer.options)
            fixture.clock.advance(by: 1)
        }
        let first = try await fixture.api.listLikedPosts(.init(), options: customer.options)
        XCTAssertEqual(first.posts.map(\.id), [posts[1].id, posts[4].id, posts[0].id])
        XCTAssertTrue(first.posts.allSatisfy(\.liked))
        let second = try await fixture.api.listLikedPosts(
            .init(page: .init(cursor: first.page!.nextCursor)), options: customer.options)
        XCTAssertEqual(second.posts.map(\.id), [posts[2].id])
        XCTAssertEqual(second.page?.nextCursor, "")
        try await fixture.stop()
    }
}
