import Foundation
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

/// Images are the part of ContentService that several apps use (YeDi, Housetainer, Zipadoo): each image
/// carries its uploader's app, and a caller of one app never finds, nor attaches, another app's image.
final class ContentTenantTests: XCTestCase {
    private static let appsFolder = ServiceHarness.repositoryApps

    private var fixture: ContentFixture!

    override func setUp() async throws {
        fixture = try await ContentFixture.start(apps: Self.appsFolder)
    }

    override func tearDown() async throws {
        try await fixture?.stop()
        fixture = nil
    }

    private func member(_ id: String, app: AppID) throws -> CallOptions {
        fixture.options(try fixture.harness.token(user: id, role: "member", app: app, now: fixture.clock.now))
    }

    func testTenantAnImageIsFoundOnlyWithinItsUploadersApp() async throws {
        let zipadoo = try member("zm-1", app: "zipadoo")
        let theirs = try await fixture.api.uploadImage(
            .init(data: SampleImages.png(width: 5, height: 4, seed: 31)), options: zipadoo)
        let own = try await fixture.api.getImage(.init(imageID: theirs.id), options: zipadoo)
        XCTAssertEqual(own.image?.id, theirs.id, "the uploader's app finds it")

        let customer = try await fixture.customer()
        let byYeDiUser = await rpcError {
            _ = try await self.fixture.api.getImage(.init(imageID: theirs.id), options: customer.options)
        }
        XCTAssertEqual(byYeDiUser?.code, .notFound)
        XCTAssertTrue(byYeDiUser?.message.hasPrefix("image_id") == true, byYeDiUser?.message ?? "")
        let anonymous = await statusCode { _ = try await self.fixture.api.getImage(.init(imageID: theirs.id)) }
        XCTAssertEqual(anonymous, .notFound, "an anonymous caller is in YeDi unless it names another app")

        let designer = try await fixture.designer()
        let yediImage = try await fixture.upload(designer)
        let byZipadoo = await statusCode {
            _ = try await self.fixture.api.getImage(.init(imageID: yediImage.id), options: zipadoo)
        }
        XCTAssertEqual(byZipadoo, .notFound)
    }

    func testTenantAnotherAppsImageCannotBeAttachedAndOtherAppsReachOnlyImages() async throws {
        let zipadoo = try member("zm-2", app: "zipadoo")
        let theirs = try await fixture.api.uploadImage(
            .init(data: SampleImages.png(width: 5, height: 4, seed: 32)), options: zipadoo)
        let designer = try await fixture.designer()
        let attached = await rpcError {
            _ = try await self.fixture.api.createPost(
                .init(
                    title: "남의 사진", description: "d", priceKRW: 10_000, category: .cut, photoIDs: [theirs.id]),
                options: designer.options)
        }
        XCTAssertEqual(attached?.code, .notFound, "another app's image does not exist here")
        XCTAssertTrue(attached?.message.hasPrefix("photo_ids") == true, attached?.message ?? "")

        let post = await statusCode {
            _ = try await self.fixture.api.createPost(
                .init(title: "t", description: "d", priceKRW: 10_000, category: .cut, photoIDs: [theirs.id]),
                options: zipadoo)
        }
        XCTAssertEqual(post, .permissionDenied, "posts are YeDi's")
        let feed = await statusCode { _ = try await self.fixture.api.getFeed(.init(), options: zipadoo) }
        XCTAssertEqual(feed, .permissionDenied)
        let slp = try member("sm-1", app: "slp")
        let slpUpload = await statusCode {
            _ = try await self.fixture.api.uploadImage(
                .init(data: SampleImages.png(width: 5, height: 4, seed: 33)), options: slp)
        }
        XCTAssertEqual(slpUpload, .permissionDenied, "SLP shows no photos")
    }
}
