import Foundation
import RPCCore
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

/// Posts: only designers create them, only their author changes or deletes them, and every field is checked.
final class PostTests: XCTestCase {
    func testADesignerPostsWithPhotosAndEveryoneSeesItWithItsAuthor() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer("박지호")
        let first = try await fixture.upload(designer, SampleImages.png(width: 10, height: 8))
        let second = try await fixture.upload(designer, SampleImages.jpeg(width: 16, height: 16))
        let post = try await fixture.api.createPost(
            .init(
                title: "  허쉬컷 ", description: "손상이 적어요", priceKRW: 46_000, category: .cut,
                photoIDs: [second.id, first.id]),
            options: designer.options)
        XCTAssertEqual(post.title, "허쉬컷", "titles are trimmed")
        XCTAssertEqual(post.designerID, designer.id)
        XCTAssertEqual(post.photos.map(\.id), [second.id, first.id], "photos keep the designer's order")
        XCTAssertEqual(post.photos.first?.width, 16)
        XCTAssertEqual(post.author?.name, "박지호")
        XCTAssertEqual(post.createdAtMs, fixture.clock.nowMilliseconds)

        let anonymous = try await fixture.api.getPost(.init(postID: post.id))
        XCTAssertEqual(anonymous, post)
        try await fixture.stop()
    }

    func testACustomerCannotPostAndFieldsAreChecked() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let other = try await fixture.designer()
        let customer = try await fixture.customer()
        let photo = try await fixture.upload(designer)
        let othersPhoto = try await fixture.upload(other)
        let valid = YediContent.CreatePostRequest(
            title: "레이어드컷", description: "설명", priceKRW: 45_000, category: .cut, photoIDs: [photo.id])

        let byCustomer = await statusCode {
            _ = try await fixture.api.createPost(.init(photoIDs: [photo.id]), options: customer.options)
        }
        XCTAssertEqual(byCustomer, .permissionDenied, "a customer creating a post")
        let anonymous = await statusCode { _ = try await fixture.api.createPost(valid) }
        XCTAssertEqual(anonymous, .unauthenticated)

        var many: [String] = []
        for _ in 0..<11 { many.append(try await fixture.upload(designer).id) }
        let cases: [(String, (inout YediContent.CreatePostRequest) -> Void, StatusCode)] = [
            ("empty title", { $0.title = "  " }, .invalidArgument),
            ("long title", { $0.title = String(repeating: "가", count: 101) }, .invalidArgument),
            ("empty description", { $0.description = "" }, .invalidArgument),
            ("negative price", { $0.priceKRW = -1 }, .invalidArgument),
            ("no category", { $0.category = .unspecified }, .invalidArgument),
            ("unknown category", { $0.category = .init(rawValue: 9) }, .invalidArgument),
            ("no photo", { $0.photoIDs = [] }, .invalidArgument),
            ("eleven photos", { $0.photoIDs = many }, .invalidArgument),
            ("a photo twice", { $0.photoIDs = [photo.id, photo.id] }, .invalidArgument),
            ("an unknown photo", { $0.photoIDs = ["missing"] }, .notFound),
            ("another designer's photo", { $0.photoIDs = [othersPhoto.id] }, .permissionDenied),
        ]
        for (name, change, expected) in cases {
            var request = valid
            change(&request)
            let code = await statusCode { _ = try await fixture.api.createPost(request, options: designer.options) }
            XCTAssertEqual(code, expected, name)
        }
        let ten = try await fixture.api.createPost(
            .init(title: "t", description: "d", priceKRW: 0, category: .other, photoIDs: Array(many.prefix(10))),
            options: designer.options)
        XCTAssertEqual(ten.photos.count, 10)
        let feed = try await fixture.api.getFeed(.init(page: .init(limit: 50)))
        XCTAssertEqual(feed.posts.map(\.id), [ten.id], "no refused post was stored")
        try await fixture.stop()
    }

    func testOnlyTheAuthorEditsOrDeletesAndDeletingRemovesItsLikes() async throws {
        let fixture = try await ContentFixture.start()
        let author = try await fixture.designer()
        let other = try await fixture.designer()
        let customer = try await fixture.customer()
        let post = try await fixture.post(author)
        _ = try await fixture.api.like(.init(postID: post.id), options: customer.options)
        let newPhoto = try await fixture.upload(author)
        let edit = YediContent.UpdatePostRequest(
            postID: post.id, title: "펌 수정", description: "새 설명", priceKRW: 80_000, category: .perm,
            photoIDs: [newPhoto.id])

        let byOther = await statusCode { _ = try await fixture.api.updatePost(edit, options: other.options) }
        XCTAssertEqual(byOther, .permissionDenied, "a designer editing another designer's post")
        let deleteByOther = await statusCode {
            _ = try await fixture.api.deletePost(.init(postID: post.id), options: other.options)
        }
        XCTAssertEqual(deleteByOther, .permissionDenied)
        let byCustomer = await statusCode { _ = try await fixture.api.updatePost(edit, options: customer.options) }
        XCTAssertEqual(byCustomer, .permissionDenied)
        let missing = await statusCode {
            var request = edit
            request.postID = "missing"
            _ = try await fixture.api.updatePost(request, options: author.options)
        }
        XCTAssertEqual(missing, .notFound)

        fixture.clock.advance(by: 60)
        let edited = try await fixture.api.updatePost(edit, options: author.options)
        XCTAssertEqual(edited.title, "펌 수정")
        XCTAssertEqual(edited.category, .perm)
        XCTAssertEqual(edited.photos.map(\.id), [newPhoto.id])
        XCTAssertEqual(edited.likeCount, 1, "editing keeps the likes")
        XCTAssertEqual(edited.createdAtMs, post.createdAtMs)
        XCTAssertEqual(edited.updatedAtMs, fixture.clock.nowMilliseconds)

        _ = try await fixture.api.deletePost(.init(postID: post.id), options: author.options)
        let gone = await statusCode { _ = try await fixture.api.getPost(.init(postID: post.id)) }
        XCTAssertEqual(gone, .notFound)
        let again = await statusCode {
            _ = try await fixture.api.deletePost(.init(postID: post.id), options: author.options)
        }
        XCTAssertEqual(again, .notFound)
        let liked = try await fixture.api.listLikedPosts(.init(), options: customer.options)
        XCTAssertTrue(liked.posts.isEmpty)
        let likeRows = try await fixture.content.environment.database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM post_like")
        }
        XCTAssertEqual(likeRows, 0, "deleting the post removed its likes")
        try await fixture.stop()
    }

    func testInternalPreviewsAndImageRefsAreForChatOnly() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let post = try await fixture.post(designer, title: "레이어드컷 추천")
        let image = try await fixture.upload(designer)
        let previews = try await fixture.asService("chat") { content in
            try await content.getPostPreviews(.init(postIDs: ["missing", post.id, post.id]))
        }
        XCTAssertEqual(
            previews.previews,
            [.init(postID: post.id, designerID: designer.id, title: "레이어드컷 추천", firstPhoto: post.photos[0])])
        let refs = try await fixture.asService("chat") { content in
            try await content.getImageRefs(.init(imageIDs: [image.id, "missing", post.photos[0].id]))
        }
        XCTAssertEqual(refs.images.map(\.image?.id), [image.id, post.photos[0].id], "in the order asked")
        XCTAssertEqual(refs.images.map(\.ownerID), [designer.id, designer.id])
        let tooMany = await statusCode {
            _ = try await fixture.asService("chat") { content in
                try await content.getImageRefs(.init(imageIDs: (0...100).map { "i\($0)" }))
            }
        }
        XCTAssertEqual(tooMany, .invalidArgument)
        let byBooking = await statusCode {
            _ = try await fixture.asService("booking") { content in
                try await content.getPostPreviews(.init(postIDs: [post.id]))
            }
        }
        XCTAssertEqual(byBooking, .permissionDenied)
        let byUser = await statusCode {
            _ = try await fixture.api.getImageRefs(.init(imageIDs: [image.id]), options: designer.options)
        }
        XCTAssertEqual(byUser, .permissionDenied)
        try await fixture.stop()
    }
}
