import Foundation
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

/// Operators hide and feature their own app's content: a hidden post or review leaves every list (and a
/// review its designer's summary) while its author still sees it; every change reaches the app's
/// operator log in AccountService through the outbox.
final class ContentModerationTests: XCTestCase {
    private static let appsFolder = ServiceHarness.repositoryApps

    private var fixture: ContentFixture!

    override func setUp() async throws {
        fixture = try await ContentFixture.start(apps: Self.appsFolder)
    }

    override func tearDown() async throws {
        try await fixture?.stop()
        fixture = nil
    }

    private var moderation: YediContent.ContentModeration.Client {
        YediContent.ContentModeration.Client(fixture.contentClient)
    }

    private func operatorOptions(_ id: String = "op-1", app: AppID = .yedi, role: UserRole = "operator") throws
        -> CallOptions
    {
        fixture.options(try fixture.harness.token(user: id, role: role, app: app, now: fixture.clock.now))
    }

    private func hide(_ kind: YediContent.ModeratedKind, _ id: String, options: CallOptions) async throws -> Bool {
        try await moderation.moderateContent(
            .init(kind: kind, id: id, action: .hide, reason: "광고성 게시물"), options: options
        ).changed
    }

    func testTenantOperatorsHideAndFeatureTheirOwnAppsPostsOnly() async throws {
        let designer = try await fixture.designer()
        let customer = try await fixture.customer()
        let hidden = try await fixture.post(designer, title: "숨길 글")
        let featured = try await fixture.post(designer, title: "추천 글")
        let yediOperator = try operatorOptions()

        let byCustomer = await statusCode { _ = try await self.hide(.post, hidden.id, options: customer.options) }
        XCTAssertEqual(byCustomer, .permissionDenied)
        let slpOperator = try operatorOptions("op-slp", app: "slp")
        let otherApp = await statusCode { _ = try await self.hide(.post, hidden.id, options: slpOperator) }
        XCTAssertEqual(otherApp, .notFound, "an SLP operator finds no YeDi post")
        let noReason = await rpcError {
            _ = try await self.moderation.moderateContent(
                .init(kind: .post, id: hidden.id, action: .hide), options: yediOperator)
        }
        XCTAssertEqual(noReason?.code, .invalidArgument)
        XCTAssertTrue(noReason?.message.hasPrefix("reason") == true, noReason?.message ?? "")

        let changed = try await hide(.post, hidden.id, options: yediOperator)
        XCTAssertTrue(changed)
        let again = try await hide(.post, hidden.id, options: yediOperator)
        XCTAssertFalse(again, "hiding a hidden post changes nothing")

        let feed = try await fixture.api.getFeed(.init())
        XCTAssertEqual(feed.posts.map(\.id), [featured.id], "a hidden post is in no feed")
        let designerList = try await fixture.api.listDesignerPosts(.init(designerID: designer.id))
        XCTAssertEqual(designerList.posts.map(\.id), [featured.id])
        let anonymous = await statusCode { _ = try await self.fixture.api.getPost(.init(postID: hidden.id)) }
        XCTAssertEqual(anonymous, .notFound)
        let asCustomer = await statusCode {
            _ = try await self.fixture.api.getPost(.init(postID: hidden.id), options: customer.options)
        }
        XCTAssertEqual(asCustomer, .notFound)
        let like = await statusCode {
            _ = try await self.fixture.api.like(.init(postID: hidden.id), options: customer.options)
        }
        XCTAssertEqual(like, .notFound, "a hidden post cannot be liked")
        let ownView = try await fixture.api.getPost(.init(postID: hidden.id), options: designer.options)
        XCTAssertTrue(ownView.hidden, "its designer sees it, marked hidden")
        let operatorView = try await fixture.api.getPost(.init(postID: hidden.id), options: yediOperator)
        XCTAssertTrue(operatorView.hidden)

        let none = try await fixture.api.getFeed(.init(scope: .featured))
        XCTAssertTrue(none.posts.isEmpty)
        _ = try await moderation.moderateContent(
            .init(kind: .post, id: featured.id, action: .feature), options: yediOperator)
        fixture.clock.advance(by: 1)
        _ = try await moderation.moderateContent(
            .init(kind: .post, id: hidden.id, action: .feature), options: yediOperator)
        let featuredFeed = try await fixture.api.getFeed(.init(scope: .featured))
        XCTAssertEqual(featuredFeed.posts.map(\.id), [featured.id], "a hidden post stays out of the featured feed")
        XCTAssertTrue(featuredFeed.posts[0].featured)

        _ = try await moderation.moderateContent(
            .init(kind: .post, id: hidden.id, action: .show), options: yediOperator)
        let shown = try await fixture.api.getFeed(.init(scope: .featured))
        XCTAssertEqual(shown.posts.map(\.id), [hidden.id, featured.id], "most recently featured first")

        let log = YediModeration.Moderation.Client(fixture.accountClient)
        var actions: [YediModeration.OperatorAction] = []
        let logged = try await eventually(timeout: 20) {
            actions = try await log.listOperatorActions(.init(), options: yediOperator).actions
            return actions.count == 4
        }
        XCTAssertTrue(logged, "every change reaches the app's operator log: \(actions)")
        XCTAssertEqual(
            Set(actions.map(\.action)), ["hide-post", "feature-post", "show-post"], "\(actions.map(\.action))")
        XCTAssertTrue(actions.allSatisfy { $0.operatorID == "op-1" })
        XCTAssertEqual(actions.first { $0.action == "hide-post" }?.subject, "post:\(hidden.id)")
        XCTAssertEqual(actions.first { $0.action == "hide-post" }?.detail, "광고성 게시물")
        let slpLog = try await log.listOperatorActions(.init(), options: slpOperator)
        XCTAssertTrue(slpLog.actions.isEmpty, "another app's log shows none of it")
    }

    func testAHiddenReviewLeavesTheDesignersListAndSummaryButNotItsWriters() async throws {
        let designer = try await fixture.designer()
        let customer = try await fixture.customer()
        fixture.reservation("r-1", customer: customer, designer: designer)
        let review = try await fixture.review("r-1", by: customer, score: 1)
        let yediOperator = try operatorOptions()
        func summary() async throws -> Int64 {
            try await fixture.asService("account") { content in
                try await content.getReviewSummaries(.init(designerIDs: [designer.id])).summaries[0].reviewCount
            }
        }
        let before = try await summary()
        XCTAssertEqual(before, 1)

        let feature = await rpcError {
            _ = try await self.moderation.moderateContent(
                .init(kind: .review, id: review.id, action: .feature), options: yediOperator)
        }
        XCTAssertEqual(feature?.code, .invalidArgument)
        XCTAssertTrue(feature?.message.hasPrefix("action") == true, feature?.message ?? "")

        let changed = try await hide(.review, review.id, options: yediOperator)
        XCTAssertTrue(changed)
        let listed = try await fixture.api.listDesignerReviews(.init(designerID: designer.id))
        XCTAssertTrue(listed.reviews.isEmpty)
        let whileHidden = try await summary()
        XCTAssertEqual(whileHidden, 0, "a hidden review does not count")
        let mine = try await fixture.api.listMyReviews(.init(), options: customer.options)
        XCTAssertEqual(mine.reviews.map(\.id), [review.id])
        XCTAssertTrue(mine.reviews[0].hidden, "its writer sees it, marked hidden")

        _ = try await moderation.moderateContent(
            .init(kind: .review, id: review.id, action: .show), options: yediOperator)
        let after = try await summary()
        XCTAssertEqual(after, 1)
        let back = try await fixture.api.listDesignerReviews(.init(designerID: designer.id))
        XCTAssertEqual(back.reviews.map(\.id), [review.id])
    }
}
