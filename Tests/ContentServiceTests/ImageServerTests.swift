import Foundation
import NIOHTTP1
import RPCCore
import ServiceTestSupport
import XCTest
import YediCrypto
import YediImaging
import YediProto

@testable import ContentService

/// The HTTPS image port through a real client: public post photos with immutable caching, ETags and
/// ranges; signed URLs for the rest, refused when tampered with or expired; 404 for what is not there.
final class ImageServerTests: XCTestCase {
    private var fixture: ContentFixture!
    private var http: ImageHTTPClient!

    override func setUp() async throws {
        fixture = try await ContentFixture.start()
        http = ImageHTTPClient(trusting: fixture.harness.pki.caFile)
    }

    override func tearDown() async throws {
        try await http?.shutdown()
        try await fixture?.stop()
    }

    /// A designer's post with one 2000×1500 photo.
    private func postPhoto() async throws -> YediCommon.ImageRef {
        let designer = try await fixture.designer()
        let photo = try await fixture.upload(designer, try TestPhotos.jpeg(width: 2_000, height: 1_500))
        let post = try await fixture.api.createPost(
            .init(title: "컷", description: "설명", priceKRW: 1, category: .cut, photoIDs: [photo.id]),
            options: designer.options)
        return try XCTUnwrap(post.photos.first)
    }

    private static func name(_ url: String) -> String {
        String(url.split(separator: "?")[0].split(separator: "/").last!.dropLast(".jpg".count))
    }

    func testAPostPhotoIsServedAtItsPublicURLWithImmutableCachingAndItsETag() async throws {
        let base = try await fixture.imageBase()
        let photo = try await postPhoto()
        XCTAssertTrue(photo.url.hasPrefix(base + "/images/"), photo.url)
        XCTAssertFalse(photo.url.contains("?"), "a post photo's URL is public: \(photo.url)")
        XCTAssertTrue(photo.thumbnailURL.hasPrefix(base + "/images/"), photo.thumbnailURL)

        let response = try await http.fetch(photo.url)
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.header("content-type"), "image/jpeg")
        XCTAssertEqual(response.header("cache-control"), "public, max-age=31536000, immutable")
        XCTAssertEqual(response.header("accept-ranges"), "bytes")
        let name = Self.name(photo.url)
        XCTAssertEqual(response.header("etag"), "\"\(name)\"")
        XCTAssertEqual(SHA256.hex(SHA256.hash(response.body)), name, "the URL names the bytes it serves")
        let size = try ImageHeader.size(of: response.body)
        XCTAssertEqual([size.width, size.height], [1_280, 960])

        let thumbnail = try await http.fetch(photo.thumbnailURL)
        XCTAssertEqual(thumbnail.status, .ok)
        let thumbnailSize = try ImageHeader.size(of: thumbnail.body)
        XCTAssertEqual([thumbnailSize.width, thumbnailSize.height], [400, 300])

        let head = try await http.fetch(photo.url, method: .HEAD)
        XCTAssertEqual(head.status, .ok)
        XCTAssertEqual(head.header("content-length"), String(response.body.count))
        XCTAssertEqual(head.body, [])

        for tag in ["\"\(name)\"", "W/\"\(name)\"", "\"other\", \"\(name)\"", "*"] {
            let revalidated = try await http.fetch(photo.url, headers: [("If-None-Match", tag)])
            XCTAssertEqual(revalidated.status, .notModified, tag)
            XCTAssertEqual(revalidated.body, [], tag)
            XCTAssertEqual(revalidated.header("etag"), "\"\(name)\"")
        }
        let changed = try await http.fetch(photo.url, headers: [("If-None-Match", "\"other\"")])
        XCTAssertEqual(changed.status, .ok)
    }

    func testRangesGet206AndARangePastTheEnd416() async throws {
        let photo = try await postPhoto()
        let whole = try await http.fetch(photo.url).body
        let length = whole.count

        let first = try await http.fetch(photo.url, headers: [("Range", "bytes=0-99")])
        XCTAssertEqual(first.status, .partialContent)
        XCTAssertEqual(first.body, Array(whole[0..<100]))
        XCTAssertEqual(first.header("content-range"), "bytes 0-99/\(length)")

        let last = try await http.fetch(photo.url, headers: [("Range", "bytes=-10")])
        XCTAssertEqual(last.status, .partialContent)
        XCTAssertEqual(last.body, Array(whole.suffix(10)))

        let rest = try await http.fetch(photo.url, headers: [("Range", "bytes=\(length - 5)-")])
        XCTAssertEqual(rest.body, Array(whole.suffix(5)))
        XCTAssertEqual(rest.header("content-range"), "bytes \(length - 5)-\(length - 1)/\(length)")

        let past = try await http.fetch(photo.url, headers: [("Range", "bytes=\(length)-")])
        XCTAssertEqual(past.status, .rangeNotSatisfiable)
        XCTAssertEqual(past.header("content-range"), "bytes */\(length)")

        let several = try await http.fetch(photo.url, headers: [("Range", "bytes=0-1,5-6")])
        XCTAssertEqual(several.status, .ok, "several ranges: the whole image")
        XCTAssertEqual(several.body, whole)
    }

    func testAnUploadsSignedURLWorksUntilItExpiresAndATamperedOneIsRefused() async throws {
        let customer = try await fixture.customer()
        let ref = try await fixture.upload(customer, try TestPhotos.jpeg(width: 640, height: 480))
        XCTAssertTrue(ref.url.contains("?expires="), "an upload nothing shows yet is signed: \(ref.url)")
        XCTAssertTrue(ref.url.contains("&signature="), ref.url)

        let signed = try await http.fetch(ref.url)
        XCTAssertEqual(signed.status, .ok)
        let cacheControl = try XCTUnwrap(signed.header("cache-control"))
        XCTAssertTrue(cacheControl.hasPrefix("private, max-age="), cacheControl)
        let maxAge = try XCTUnwrap(Int(cacheControl.dropFirst("private, max-age=".count)))
        XCTAssertGreaterThan(maxAge, 86_400 - 60, "valid for the default day at least")
        XCTAssertLessThanOrEqual(maxAge, 86_400 + 3_600)

        let unsigned = String(ref.url.split(separator: "?")[0])
        let withoutSignature = try await http.fetch(unsigned)
        XCTAssertEqual(withoutSignature.status, .notFound, "not public: without its signature it is not there")

        let query = ref.url.split(separator: "?")[1]
        let expires = try XCTUnwrap(Int64(query.split(separator: "&")[0].dropFirst("expires=".count)))
        let signature = String(query.split(separator: "&")[1].dropFirst("signature=".count))
        let flipped = (signature.first == "A" ? "B" : "A") + signature.dropFirst()
        let other = try await fixture.upload(customer, try TestPhotos.jpeg(width: 640, height: 480, seed: 7))
        let otherSignature = String(other.url.split(separator: "signature=")[1])
        let tampered = [
            ("signature changed", "\(unsigned)?expires=\(expires)&signature=\(flipped)"),
            ("expiry moved", "\(unsigned)?expires=\(expires + 3_600)&signature=\(signature)"),
            ("another image's signature", "\(unsigned)?expires=\(expires)&signature=\(otherSignature)"),
            ("truncated signature", "\(unsigned)?expires=\(expires)&signature=\(signature.dropLast())"),
            ("fields swapped", "\(unsigned)?signature=\(signature)&expires=\(expires)"),
        ]
        for (what, url) in tampered {
            let refused = try await http.fetch(url)
            XCTAssertEqual(refused.status, .forbidden, what)
            XCTAssertNotEqual(refused.header("content-type"), "image/jpeg", what)
        }

        // The injected clock moves past the expiry: the same URL is refused.
        let now = fixture.clock.nowMilliseconds / 1_000
        fixture.clock.advance(by: TimeInterval(expires - now))
        let expired = try await http.fetch(ref.url)
        XCTAssertEqual(expired.status, .forbidden)
        XCTAssertEqual(String(decoding: expired.body, as: UTF8.self), "expired\n")
    }

    func testWhatIsNotThereIs404AndOnlyGETAndHEADAreServed() async throws {
        let base = try await fixture.imageBase()
        let urls = try XCTUnwrap(fixture.hooks.urls.value)
        let missing = String(repeating: "0", count: 64)
        let notFound = [
            "\(base)/images/\(missing).jpg",
            urls.url(missing, .signed),
            "\(base)/images/\(missing.uppercased()).jpg",
            "\(base)/images/\(missing)",
            "\(base)/images/..%2F..%2Fimage-url.key",
            "\(base)/images/",
            "\(base)/",
        ]
        for url in notFound {
            let response = try await http.fetch(url)
            XCTAssertEqual(response.status, .notFound, url)
        }
        let photo = try await postPhoto()
        let post = try await http.fetch(photo.url, method: .POST)
        XCTAssertEqual(post.status, .methodNotAllowed)
        XCTAssertEqual(post.header("allow"), "GET, HEAD")
    }

    func testImageRefsCarryPublicURLsForPostsAndSignedOnesForChatAndGetImage() async throws {
        let photo = try await postPhoto()
        let previews = try await fixture.asService("chat") { client in
            try await client.getImageRefs(.init(imageIDs: [photo.id]))
        }
        let chatPhoto = try XCTUnwrap(previews.images.first?.image)
        XCTAssertTrue(chatPhoto.url.contains("signature="), "chat photos are signed")
        let data = try await fixture.api.getImage(.init(imageID: photo.id))
        let image = try XCTUnwrap(data.image)
        XCTAssertTrue(image.url.contains("signature="))
        XCTAssertEqual(Self.name(image.url), Self.name(photo.url), "the same variant, signed")
        let viaSigned = try await http.fetch(image.url)
        XCTAssertEqual(viaSigned.status, .ok)
    }
}
