import Foundation
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediCrypto
import YediProto

@testable import ContentService

/// Uploads nobody uses go (row and blob) once their grace period (24 h) is over, on the injected clock;
/// images of posts, reviews, chat messages and profiles stay.
final class ImageCollectionTests: XCTestCase {
    func testUnreferencedImagesGoAfterTheGracePeriodAndUsedOnesStay() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let customer = try await fixture.customer()
        func upload(_ person: ContentFixture.Person, seed: UInt8) async throws -> (id: String, blob: String) {
            let bytes = SampleImages.png(width: 5, height: 5, seed: seed)
            let ref = try await fixture.api.uploadImage(.init(data: bytes), options: person.options)
            return (ref.id, fixture.imageFolder.appendingPathComponent(SHA256.hex(SHA256.hash(bytes))).path)
        }
        let abandoned = try await upload(designer, seed: 1)
        let inPost = try await upload(designer, seed: 2)
        _ = try await fixture.api.createPost(
            .init(title: "컷", description: "설명", priceKRW: 1, category: .cut, photoIDs: [inPost.id]),
            options: designer.options)
        let profile = try await upload(customer, seed: 3)
        _ = try await fixture.accounts.updateProfile(
            .init(fields: ["profile_image_id"], profileImageID: profile.id), options: customer.options)
        let inReview = try await upload(customer, seed: 4)
        fixture.reservation("r-1", customer: customer, designer: designer)
        _ = try await fixture.api.createReview(
            .init(reservationID: "r-1", score: 5, text: "좋아요", photoIDs: [inReview.id], keywords: [.kind]),
            options: customer.options)
        let inChat = try await upload(customer, seed: 5)
        _ = try await fixture.asService("chat") { try await $0.getImageRefs(.init(imageIDs: [inChat.id])) }

        let env = fixture.content.environment
        let library = try XCTUnwrap(fixture.hooks.library.value)
        let collector = ContentServiceDefinition.imageCollector(
            env, images: library, peers: ContentPeers.live(env.peers))
        let job = PeriodicJob(name: "test", period: .seconds(3_600), logger: env.logger, work: collector.collect)
        func exists(_ id: String) async throws -> Bool { !(try await fixture.store.images(ids: [id]).isEmpty) }

        // Within the grace period nothing goes.
        fixture.clock.advance(by: 23 * 3_600)
        let renewed = ContentFixture.Person(
            id: designer.id,
            token: try fixture.harness.token(user: designer.id, role: .designer, now: fixture.clock.now))
        let late = try await upload(renewed, seed: 6)  // uploaded 23 h after the others
        let early = await job.runOnce()
        XCTAssertEqual(early, 0)
        let abandonedWithinGrace = try await exists(abandoned.id)
        XCTAssertTrue(abandonedWithinGrace)

        // Past it: only the abandoned upload goes, row and blob; the late one is still within its grace.
        fixture.clock.advance(by: 3_600 + 1)
        let removed = await job.runOnce()
        XCTAssertEqual(removed, 1)
        let abandonedStays = try await exists(abandoned.id)
        XCTAssertFalse(abandonedStays)
        XCTAssertFalse(FileManager.default.fileExists(atPath: abandoned.blob), "the blob stayed")
        let getImage = await statusCode {
            _ = try await fixture.api.getImage(.init(imageID: abandoned.id))
        }
        XCTAssertEqual(getImage, .notFound, "served from the cache after deletion")
        for kept in [inPost, profile, inReview, inChat, late] {
            let stays = try await exists(kept.id)
            XCTAssertTrue(stays, "\(kept.id) was collected")
            XCTAssertTrue(FileManager.default.fileExists(atPath: kept.blob))
        }

        // The late upload's grace ends a day after it was made.
        fixture.clock.advance(by: 23 * 3_600)
        let final = await job.runOnce()
        XCTAssertEqual(final, 1)
        let lateStays = try await exists(late.id)
        XCTAssertFalse(lateStays)
        try await fixture.stop()
    }

    /// When AccountService cannot say which images are profile images, nothing is deleted.
    func testNothingGoesWhileProfilesCannotBeChecked() async throws {
        let fixture = try await ContentFixture.start()
        let designer = try await fixture.designer()
        let image = try await fixture.upload(designer)
        let env = fixture.content.environment
        let library = try XCTUnwrap(fixture.hooks.library.value)
        var peers = ContentPeers.live(env.peers)
        peers.users = { _ in throw RPCError(code: .unavailable, message: "account is down") }
        let collector = ContentServiceDefinition.imageCollector(env, images: library, peers: peers)
        fixture.clock.advance(by: 25 * 3_600)
        do {
            _ = try await collector.collect()
            XCTFail("collected without checking profiles")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unavailable)
        }
        let stays = try await fixture.store.images(ids: [image.id])
        XCTAssertEqual(stays.count, 1)
        try await fixture.stop()
    }
}
