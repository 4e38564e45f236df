import Foundation
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediCrypto
import YediProto

@testable import ContentService

/// What a refused call says (nil: it succeeded).
private func refusal(_ body: () async throws -> Void) async -> (StatusCode, String)? {
    do {
        try await body()
        return nil
    } catch let error as RPCError {
        return (error.code, error.message)
    } catch {
        return (.unknown, "\(error)")
    }
}

/// Per-user quotas on posts, reviews and uploaded bytes: counted in the inserting transaction, answered
/// RESOURCE_EXHAUSTED naming the quota, reset at midnight in Seoul.
final class ContentQuotaTests: XCTestCase {
    /// The next Seoul midnight after `date`.
    private func nextSeoulMidnight(after date: Date) -> Date {
        let milliseconds = Int64(date.timeIntervalSince1970 * 1_000)
        return Date(timeIntervalSince1970: Double(QuotaDay.start(of: milliseconds) + 86_400_000) / 1_000)
    }

    /// 20 concurrent CreatePost calls by one designer with `posts.day=5`: exactly 5 posts.
    func testConcurrentPostsNeverPassTheDailyQuota() async throws {
        let fixture = try await ContentFixture.start(quotas: ["posts.day=5"])
        let designer = try await fixture.designer()
        let photo = try await fixture.upload(designer)
        let api = fixture.api
        let outcomes = await withTaskGroup(of: (StatusCode, String)?.self) { group in
            for index in 0..<20 {
                group.addTask {
                    await refusal {
                        _ = try await api.createPost(
                            .init(
                                title: "컷 \(index)", description: "설명", priceKRW: 10_000, category: .cut,
                                photoIDs: [photo.id]), options: designer.options)
                    }
                }
            }
            var all: [(StatusCode, String)?] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        XCTAssertEqual(outcomes.filter { $0 == nil }.count, 5)
        for case (let code, let message)? in outcomes {
            XCTAssertEqual(code, .resourceExhausted)
            XCTAssertEqual(message, "quota posts.day: at most 5 posts per day")
        }
        let posts = try await fixture.content.environment.database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM post") ?? 0
        }
        XCTAssertEqual(posts, 5)
        // The next Seoul day starts a new count (a token valid on the moved clock).
        fixture.clock.set(nextSeoulMidnight(after: fixture.clock.now))
        _ = try await api.createPost(
            .init(title: "다음 날", description: "설명", priceKRW: 10_000, category: .cut, photoIDs: [photo.id]),
            options: try resignIn(fixture, designer))
        try await fixture.stop()
    }

    /// `reviews.day=2`: a customer's third review of the day is refused, naming the quota.
    func testReviewsPerDay() async throws {
        let fixture = try await ContentFixture.start(quotas: ["reviews.day=2"])
        let designer = try await fixture.designer()
        let customer = try await fixture.customer()
        for id in ["r-1", "r-2", "r-3"] { fixture.reservation(id, customer: customer, designer: designer) }
        _ = try await fixture.review("r-1", by: customer)
        _ = try await fixture.review("r-2", by: customer)
        let third = await refusal { _ = try await fixture.review("r-3", by: customer) }
        XCTAssertEqual(third?.0, .resourceExhausted)
        XCTAssertEqual(third?.1, "quota reviews.day: at most 2 reviews per day")
        try await fixture.stop()
    }

    /// Bytes per day and bytes stored: the upload over either is refused and its blob is not kept; 20
    /// concurrent uploads of one image with room for 5 store exactly 5 rows.
    func testUploadBytesPerDayAndInTotal() async throws {
        let images = (0..<4).map { SampleImages.png(width: 4, height: 3, seed: UInt8(10 + $0)) }
        let three = images.prefix(3).reduce(0) { $0 + $1.count }
        let fixture = try await ContentFixture.start(quotas: ["uploads.day-bytes=\(three)"])
        let designer = try await fixture.designer()
        for image in images.prefix(3) { _ = try await fixture.upload(designer, image) }
        let fourth = await refusal { _ = try await fixture.upload(designer, images[3]) }
        XCTAssertEqual(fourth?.0, .resourceExhausted)
        XCTAssertEqual(fourth?.1, "quota uploads.day-bytes: at most \(three) bytes of images uploaded per day")
        let blob = fixture.imageFolder.appendingPathComponent(SHA256.hex(SHA256.hash(images[3]))).path
        XCTAssertFalse(FileManager.default.fileExists(atPath: blob), "the refused upload's blob stayed")
        try await fixture.stop()

        let total = try await ContentFixture.start(quotas: ["uploads.total-bytes=\(three)"])
        let other = try await total.designer()
        for image in images.prefix(3) { _ = try await total.upload(other, image) }
        total.clock.set(nextSeoulMidnight(after: total.clock.now))
        let again = try await total.designer()
        _ = try await total.upload(again, images[3])  // another user has room
        let options = try resignIn(total, other)
        let stored = await refusal { _ = try await total.api.uploadImage(.init(data: images[3]), options: options) }
        XCTAssertEqual(stored?.0, .resourceExhausted)
        XCTAssertEqual(stored?.1, "quota uploads.total-bytes: at most \(three) bytes of images stored")
        try await total.stop()

        let image = images[0]
        let concurrent = try await ContentFixture.start(quotas: ["uploads.day-bytes=\(image.count * 5)"])
        let uploader = try await concurrent.designer()
        let api = concurrent.api
        let outcomes = await withTaskGroup(of: StatusCode.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    await statusCode { _ = try await api.uploadImage(.init(data: image), options: uploader.options) }
                }
            }
            var all: [StatusCode] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        XCTAssertEqual(outcomes.filter { $0 == .ok }.count, 5, "\(outcomes)")
        XCTAssertEqual(outcomes.filter { $0 == .resourceExhausted }.count, 15)
        let rows = try await concurrent.content.environment.database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM image") ?? 0
        }
        XCTAssertEqual(rows, 5)
        let shared = concurrent.imageFolder.appendingPathComponent(SHA256.hex(SHA256.hash(image))).path
        XCTAssertTrue(FileManager.default.fileExists(atPath: shared), "refusals deleted the blob the rows use")
        try await concurrent.stop()
    }

    /// A fresh token for `person` on the fixture's (moved) clock.
    private func resignIn(_ fixture: ContentFixture, _ person: ContentFixture.Person) throws -> CallOptions {
        let token = try fixture.harness.token(user: person.id, role: .designer, now: fixture.clock.now)
        return ServiceHarness.bearer(token)
    }
}
