import Foundation
import RPCCore
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

/// Reviews: only for the customer's own past, confirmed reservation (asked of BookingService), one per
/// reservation, with a summary that always matches the reviews.
final class ReviewTests: XCTestCase {
    func testAReviewOfAPastReservationUpdatesTheDesignersSummary() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let minji = try await fixture.customer()
        let sora = try await fixture.customer()
        fixture.reservation("r-1", customer: minji, designer: designer)
        fixture.reservation("r-2", customer: sora, designer: designer)

        let review = try await fixture.review("r-1", by: minji, score: 5, keywords: [.kind, .trendy, .fairPrice])
        XCTAssertEqual(review.designerID, designer.id, "the designer comes from the reservation")
        XCTAssertEqual(review.customerID, minji.id)
        XCTAssertEqual(review.keywords, [.kind, .trendy, .fairPrice])
        XCTAssertEqual(review.photos.count, 1)
        fixture.clock.advance(by: 1)
        _ = try await fixture.review("r-2", by: sora, score: 2, keywords: [.kind])

        let listed = try await fixture.api.listDesignerReviews(.init(designerID: designer.id))
        XCTAssertEqual(listed.reviews.map(\.reservationID), ["r-2", "r-1"], "newest first")
        XCTAssertEqual(listed.averageScore, 3.5)
        XCTAssertEqual(listed.reviewCount, 2)
        XCTAssertEqual(
            listed.keywordCounts,
            [.init(keyword: .trendy, count: 1), .init(keyword: .kind, count: 2), .init(keyword: .fairPrice, count: 1)]
                .sorted { $0.count != $1.count ? $0.count > $1.count : $0.keyword.rawValue < $1.keyword.rawValue })
        let paged = try await fixture.api.listDesignerReviews(.init(designerID: designer.id, page: .init(limit: 1)))
        let rest = try await fixture.api.listDesignerReviews(
            .init(designerID: designer.id, page: .init(cursor: paged.page!.nextCursor, limit: 1)))
        XCTAssertEqual((paged.reviews + rest.reviews).map(\.reservationID), ["r-2", "r-1"])

        let mine = try await fixture.api.listMyReviews(.init(), options: minji.options)
        XCTAssertEqual(mine.reviews.map(\.id), [review.id])

        let summaries = try await fixture.asService("account") { content in
            try await content.getReviewSummaries(.init(designerIDs: [designer.id, "nobody"]))
        }
        XCTAssertEqual(summaries.summaries.map(\.designerID), [designer.id, "nobody"])
        XCTAssertEqual(summaries.summaries[0].rating, 3.5)
        XCTAssertEqual(summaries.summaries[0].reviewCount, 2)
        XCTAssertEqual(summaries.summaries[0].keywordCounts.first, .init(keyword: .kind, count: 2))
        XCTAssertEqual(summaries.summaries[1], .init(designerID: "nobody", rating: 0, reviewCount: 0))

        // AccountService's designer profile carries it (AccountService asks us with its certificate). Its
        // peer client may still be backing off from the time before ContentService listened: poll.
        let profiled = try await eventually(timeout: 20) {
            try await fixture.accounts.getDesigner(.init(designerID: designer.id)).reviews
                == .init(rating: 3.5, reviewCount: 2, keywordCounts: listed.keywordCounts)
        }
        XCTAssertTrue(profiled, "AccountService's designer profile shows ContentService's summary and keyword counts")

        let byChat = await statusCode {
            _ = try await fixture.asService("chat") { content in
                try await content.getReviewSummaries(.init(designerIDs: [designer.id]))
            }
        }
        XCTAssertEqual(byChat, .permissionDenied)
        let tooMany = await statusCode {
            _ = try await fixture.asService("account") { content in
                try await content.getReviewSummaries(.init(designerIDs: (0...100).map { "d\($0)" }))
            }
        }
        XCTAssertEqual(tooMany, .invalidArgument)
        try await fixture.stop()
    }

    func testReservationsThatCannotBeReviewed() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let minji = try await fixture.customer()
        let sora = try await fixture.customer()
        fixture.reservation("future", customer: minji, designer: designer, startsIn: 3_600)
        fixture.reservation("now", customer: minji, designer: designer, startsIn: 0)
        fixture.reservation("cancelled", customer: minji, designer: designer, status: .cancelled)
        fixture.reservation("soras", customer: sora, designer: designer)
        fixture.reservation("done", customer: minji, designer: designer)
        _ = try await fixture.review("done", by: minji)

        let cases: [(String, StatusCode)] = [
            ("future", .failedPrecondition), ("now", .failedPrecondition), ("cancelled", .failedPrecondition),
            ("missing", .notFound), ("soras", .permissionDenied), ("done", .alreadyExists),
        ]
        for (reservation, expected) in cases {
            let code = await statusCode { _ = try await fixture.review(reservation, by: minji) }
            XCTAssertEqual(code, expected, reservation)
        }
        let byDesigner = await statusCode { _ = try await fixture.review("done", by: designer) }
        XCTAssertEqual(byDesigner, .permissionDenied, "reviews are the customers'")
        let listed = try await fixture.api.listDesignerReviews(.init(designerID: designer.id))
        XCTAssertEqual(listed.reviewCount, 1, "no refused review counted")
        XCTAssertEqual(listed.reviews.count, 1)
        try await fixture.stop()
    }

    func testEveryFieldIsChecked() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let minji = try await fixture.customer()
        let sora = try await fixture.customer()
        fixture.reservation("r", customer: minji, designer: designer)
        let photo = try await fixture.upload(minji)
        let sorasPhoto = try await fixture.upload(sora)
        let valid = YediContent.CreateReviewRequest(
            reservationID: "r", score: 4, text: "좋아요", photoIDs: [photo.id], keywords: [.kind])
        let allFive: [YediContent.ReviewKeyword] = [.kind, .trendy, .meticulous, .cleanShop, .easyParking]
        let cases: [(String, (inout YediContent.CreateReviewRequest) -> Void)] = [
            ("no reservation", { $0.reservationID = "" }),
            ("score 0", { $0.score = 0 }),
            ("score 6", { $0.score = 6 }),
            ("no text", { $0.text = " \n" }),
            ("no photo", { $0.photoIDs = [] }),
            ("no keyword", { $0.keywords = [] }),
            ("a sixth keyword", { $0.keywords = allFive + [.quickHands] }),
            ("an unknown keyword", { $0.keywords = [.init(rawValue: 16)] }),
            ("UNSPECIFIED", { $0.keywords = [.unspecified] }),
            ("a keyword twice", { $0.keywords = [.kind, .kind] }),
        ]
        for (name, change) in cases {
            var request = valid
            change(&request)
            let code = await statusCode { _ = try await fixture.api.createReview(request, options: minji.options) }
            XCTAssertEqual(code, .invalidArgument, name)
        }
        var foreign = valid
        foreign.photoIDs = [sorasPhoto.id]
        let foreignCode = await statusCode { _ = try await fixture.api.createReview(foreign, options: minji.options) }
        XCTAssertEqual(foreignCode, .permissionDenied, "someone else's photo")
        var unknown = valid
        unknown.photoIDs = ["missing"]
        let unknownCode = await statusCode { _ = try await fixture.api.createReview(unknown, options: minji.options) }
        XCTAssertEqual(unknownCode, .notFound)

        var five = valid
        five.keywords = allFive
        let saved = try await fixture.api.createReview(five, options: minji.options)
        XCTAssertEqual(saved.keywords, allFive, "five keywords are allowed")
        try await fixture.stop()
    }

    func testAReviewIsRefusedWithUnavailableWhileBookingIsDown() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let minji = try await fixture.customer()
        fixture.reservation("r", customer: minji, designer: designer)
        await fixture.booking.stop()
        let code = await statusCode { _ = try await fixture.review("r", by: minji) }
        XCTAssertEqual(code, .unavailable)
        let listed = try await fixture.api.listDesignerReviews(.init(designerID: designer.id))
        XCTAssertEqual(listed.reviewCount, 0)
        try await fixture.stop()
    }
}
