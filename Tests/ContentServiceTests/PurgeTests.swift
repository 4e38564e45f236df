import Foundation
import GRDB
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

/// Account deletion: afterwards no row and no image file refers to the user, and every designer's summary
/// matches the reviews that remain.
final class PurgeTests: XCTestCase {
    func testPurgeUserLeavesNoTraceAndSummariesMatchTheRemainingReviews() async throws {
        let fixture = try await ContentFixture.start()
        let doomedDesigner = try await fixture.designer("떠나는 디자이너")
        let designer = try await fixture.designer("남는 디자이너")
        let doomed = try await fixture.customer("떠나는 고객")
        let staying = try await fixture.customer("남는 고객")

        // The customer who leaves: likes, reviews of both designers, images (one shared by identical bytes).
        let shared = SampleImages.png(width: 6, height: 6, seed: 77)
        let doomedsOwn = try await fixture.upload(doomed, SampleImages.png(width: 6, height: 6, seed: 78))
        _ = try await fixture.upload(doomed, shared)
        let stayingsCopy = try await fixture.upload(staying, shared)
        let kept = try await fixture.post(designer)
        let doomedsPost = try await fixture.post(doomedDesigner)
        _ = try await fixture.api.getImage(.init(imageID: doomedsOwn.id))  // cached before the purge
        for post in [kept, doomedsPost] {
            _ = try await fixture.api.like(.init(postID: post.id), options: doomed.options)
            _ = try await fixture.api.like(.init(postID: post.id), options: staying.options)
        }
        fixture.reservation("d-1", customer: doomed, designer: designer)
        fixture.reservation("d-2", customer: doomed, designer: doomedDesigner)
        fixture.reservation("s-1", customer: staying, designer: designer)
        fixture.reservation("s-2", customer: staying, designer: doomedDesigner)
        _ = try await fixture.api.createReview(
            .init(reservationID: "d-1", score: 1, text: "별로", photoIDs: [doomedsOwn.id], keywords: [.trendy]),
            options: doomed.options)
        _ = try await fixture.review("d-2", by: doomed, score: 2)
        _ = try await fixture.review("s-1", by: staying, score: 5, keywords: [.kind, .trendy])
        _ = try await fixture.review("s-2", by: staying, score: 4)

        for user in [doomed.id, doomedDesigner.id] {
            _ = try await fixture.asService("account") { content in try await content.purgeUser(.init(userID: user)) }
        }
        // Delivered again (the outbox retries after a lost answer): nothing changes, nothing fails.
        _ = try await fixture.asService("account") { content in try await content.purgeUser(.init(userID: doomed.id)) }

        let database = fixture.content.environment.database
        for user in [doomed.id, doomedDesigner.id] {
            let rows = try await Self.rowsReferring(to: user, in: database)
            XCTAssertEqual(rows, [String](), "rows still refer to \(user)")
        }
        // Files: exactly the blobs of the images that remain.
        let remainingShas = try await database.read { db in
            try Set(String.fetchAll(db, sql: "SELECT DISTINCT sha256 FROM image"))
        }
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: fixture.imageFolder.path))
        XCTAssertEqual(files, remainingShas, "image files are exactly those of the remaining images")
        let sharedBack = try await fixture.api.getImage(.init(imageID: stayingsCopy.id))
        XCTAssertEqual(sharedBack.data, shared, "the blob another user's image shares survives")
        let purgedImage = await statusCode { _ = try await fixture.api.getImage(.init(imageID: doomedsOwn.id)) }
        XCTAssertEqual(purgedImage, .notFound, "not even from the cache")

        // Summaries match the remaining reviews.
        let (actual, stored) = try await database.read { db in
            (
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT review.designer_id AS d, 'count' AS k, COUNT(*) AS v FROM review GROUP BY review.designer_id
                        UNION ALL SELECT designer_id, 'total', SUM(score) FROM review GROUP BY designer_id
                        UNION ALL SELECT review.designer_id, review_keyword.keyword, COUNT(*) FROM review_keyword
                            JOIN review ON review.id = review_keyword.review_id
                            GROUP BY review.designer_id, review_keyword.keyword
                        ORDER BY 1, 2
                        """
                ).map { "\($0["d"] as String)/\($0["k"] as DatabaseValue)=\($0["v"] as Int64)" },
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT designer_id AS d, 'count' AS k, review_count AS v FROM review_summary
                        UNION ALL SELECT designer_id, 'total', score_total FROM review_summary
                        UNION ALL SELECT designer_id, keyword, count FROM review_keyword_count
                        ORDER BY 1, 2
                        """
                ).map { "\($0["d"] as String)/\($0["k"] as DatabaseValue)=\($0["v"] as Int64)" }
            )
        }
        XCTAssertEqual(stored, actual, "the summaries are exactly the aggregates of the remaining reviews")
        XCTAssertFalse(actual.isEmpty)
        let summary = try await fixture.api.listDesignerReviews(.init(designerID: designer.id))
        XCTAssertEqual(summary.reviewCount, 1)
        XCTAssertEqual(summary.averageScore, 5)
        XCTAssertEqual(
            summary.keywordCounts,
            [.init(keyword: .trendy, count: 1), .init(keyword: .kind, count: 1)].sorted {
                $0.keyword.rawValue < $1.keyword.rawValue
            })
        let post = try await fixture.api.getPost(.init(postID: kept.id))
        XCTAssertEqual(post.likeCount, 1, "the purged customer's like is no longer counted")
        let gone = await statusCode { _ = try await fixture.api.getPost(.init(postID: doomedsPost.id)) }
        XCTAssertEqual(gone, .notFound)

        let byUser = await statusCode {
            _ = try await fixture.api.purgeUser(.init(userID: staying.id), options: staying.options)
        }
        XCTAssertEqual(byUser, .permissionDenied)
        let byChat = await statusCode {
            _ = try await fixture.asService("chat") { content in try await content.purgeUser(.init(userID: staying.id))
            }
        }
        XCTAssertEqual(byChat, .permissionDenied)
        try await fixture.stop()
    }

    /// "table.column" for every value equal to `user` in any table of the database.
    static func rowsReferring(to user: String, in database: ServiceDatabase) async throws -> [String] {
        try await database.read { db in
            var found: [String] = []
            let tables = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            for table in tables {
                for row in try Row.fetchAll(db, sql: "SELECT * FROM \"\(table)\"") {
                    for (column, value) in row {
                        if let text = String.fromDatabaseValue(value), text.contains(user) {
                            found.append("\(table).\(column)")
                        }
                    }
                }
            }
            return found
        }
    }
}
