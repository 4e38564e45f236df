import CountLimitedCache
import Foundation
import RPCCore
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Uploads are recognised by their bytes (magic number and a header that parses), kept content-addressed,
/// and read through the count-limited LRU cache.
final class ImageTests: XCTestCase {
    func testAPNGAJPEGAndAWebPRoundTripByteIdentical() async throws {
        let fixture = try await ContentFixture.start()
        let customer = try await fixture.customer()
        let samples: [([UInt8], String, Int32, Int32)] = [
            (SampleImages.png(width: 7, height: 5, seed: 3), "image/png", 7, 5),
            (SampleImages.jpeg(width: 16, height: 8), "image/jpeg", 16, 8),
            (try TestPhotos.webp(width: 30, height: 20), "image/webp", 30, 20),
        ]
        for (bytes, type, width, height) in samples {
            let ref = try await fixture.api.uploadImage(.init(data: bytes), options: customer.options)
            XCTAssertEqual([ref.width, ref.height], [width, height], type)
            let image = try await fixture.api.getImage(.init(imageID: ref.id))
            XCTAssertEqual(image.data, bytes, "\(type) came back changed")
            XCTAssertEqual(image.contentType, type)
            XCTAssertEqual(image.image, ref)
        }
        try await fixture.stop()
    }

    func testATextFileClaimedAsJPEGATruncatedPNGAndTenMiBPlusOneAreRefused() async throws {
        let fixture = try await ContentFixture.start()
        let customer = try await fixture.customer()
        let text = Array("hello, this is not a photo\n".utf8)
        let png = SampleImages.png(width: 20, height: 20)
        let refusals: [(String, [UInt8], String)] = [
            ("text claimed as JPEG", text, "image/jpeg"),
            ("text", text, ""),
            ("truncated PNG", Array(png.prefix(png.count - 20)), "image/png"),
            ("PNG cut inside IHDR", Array(png.prefix(20)), ""),
            ("JPEG without its end", Array(SampleImages.jpeg(width: 8, height: 8).dropLast(2)), ""),
            ("PNG claimed as JPEG", png, "image/jpeg"),
            ("10 MiB + 1", SampleImages.jpeg(width: 8, height: 8, totalBytes: (10 << 20) + 1), ""),
            ("empty", [], ""),
        ]
        for (name, bytes, claim) in refusals {
            let code = await statusCode {
                _ = try await fixture.api.uploadImage(.init(data: bytes, contentType: claim), options: customer.options)
            }
            XCTAssertEqual(code, .invalidArgument, name)
        }
        let largest = SampleImages.jpeg(width: 8, height: 8, totalBytes: 10 << 20)
        XCTAssertEqual(largest.count, 10 << 20)
        XCTAssertEqual(try ImageFormat.inspect(largest).get().type, .jpeg)
        let accepted = try await fixture.api.uploadImage(.init(data: largest), options: customer.options)
        let back = try await fixture.api.getImage(.init(imageID: accepted.id))
        XCTAssertEqual(back.data.count, largest.count, "the largest allowed image came back whole")
        let files = try FileManager.default.contentsOfDirectory(atPath: fixture.imageFolder.path)
        XCTAssertEqual(files.count, 1, "only the accepted image was stored; no temporary file is left")
        try await fixture.stop()
    }

    func testTheSameBytesAreStoredOnceUnderTheirHash() async throws {
        let fixture = try await ContentFixture.start()
        let first = try await fixture.customer()
        let second = try await fixture.customer()
        let bytes = SampleImages.png(width: 3, height: 3, seed: 9)
        let a = try await fixture.upload(first, bytes)
        let b = try await fixture.upload(second, bytes)
        XCTAssertNotEqual(a.id, b.id, "each upload is its own image (owner)")
        let files = try FileManager.default.contentsOfDirectory(atPath: fixture.imageFolder.path)
        XCTAssertEqual(files.count, 1)
        XCTAssertEqual(files.first?.count, 64, "named by the SHA-256 of the bytes")
        try await fixture.stop()
    }

    func testRepeatedReadsComeFromTheCacheWithoutOpeningTheFile() async throws {
        let fixture = try await ContentFixture.start()
        let customer = try await fixture.customer()
        let ref = try await fixture.upload(customer)
        let blobs = try XCTUnwrap(fixture.hooks.blobs.value)
        let metricsBefore = try await cacheCounters(fixture)
        for _ in 0..<5 { _ = try await fixture.api.getImage(.init(imageID: ref.id)) }
        XCTAssertEqual(blobs.reads.value, 1, "only the first read opened the file")
        let cache = try XCTUnwrap(imageCache(fixture))
        XCTAssertEqual(cache.statistics.hits, 4)
        XCTAssertEqual(cache.statistics.misses, 1)
        let metricsAfter = try await cacheCounters(fixture)
        XCTAssertEqual(metricsAfter.hits - metricsBefore.hits, 4, "/metrics shows the hits")
        XCTAssertEqual(metricsAfter.misses - metricsBefore.misses, 1, "/metrics shows the miss")
        try await fixture.stop()
    }

    func testTheCacheNeverHoldsMoreThanItsLimit() async throws {
        let fixture = try await ContentFixture.start(imageCacheItems: 3)
        let customer = try await fixture.customer()
        var refs: [YediCommon.ImageRef] = []
        for _ in 0..<6 { refs.append(try await fixture.upload(customer)) }
        let cache = try XCTUnwrap(imageCache(fixture))
        XCTAssertEqual(cache.capacity, 3, "--image-cache-items sets the limit")
        for ref in refs {
            _ = try await fixture.api.getImage(.init(imageID: ref.id))
            XCTAssertLessThanOrEqual(cache.count, 3)
        }
        XCTAssertEqual(cache.count, 3)
        XCTAssertEqual(cache.statistics.evictions, 3)
        let blobs = try XCTUnwrap(fixture.hooks.blobs.value)
        XCTAssertEqual(blobs.reads.value, 6)
        _ = try await fixture.api.getImage(.init(imageID: refs[0].id))
        XCTAssertEqual(blobs.reads.value, 7, "the evicted first image is read from its file again")
        _ = try await fixture.api.getImage(.init(imageID: refs[5].id))
        XCTAssertEqual(blobs.reads.value, 7, "the newest is still cached")
        try await fixture.stop()
    }

    func testUnknownImagesAndAnonymousUploadsAreRefused() async throws {
        let fixture = try await ContentFixture.start()
        let missing = await statusCode { _ = try await fixture.api.getImage(.init(imageID: "nope")) }
        XCTAssertEqual(missing, .notFound)
        let empty = await statusCode { _ = try await fixture.api.getImage(.init(imageID: "")) }
        XCTAssertEqual(empty, .invalidArgument)
        let anonymous = await statusCode {
            _ = try await fixture.api.uploadImage(.init(data: SampleImages.png(width: 1, height: 1)))
        }
        XCTAssertEqual(anonymous, .unauthenticated)
        try await fixture.stop()
    }

    // MARK: Helpers

    private func imageCache(_ fixture: ContentFixture) -> LRUCache<String, ImageLibrary.Image>? {
        fixture.hooks.library.value?.cache
    }

    /// `yedi_cache_{hits,misses}_total{cache="content-images"}` from the service's `/metrics`.
    private func cacheCounters(_ fixture: ContentFixture) async throws -> (hits: Int, misses: Int) {
        let port = try await fixture.content.metricsPort
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/metrics")!)
        let text = String(decoding: data, as: UTF8.self)
        func value(_ name: String) -> Int {
            for line in text.split(separator: "\n")
            where line.hasPrefix(name) && line.contains("cache=\"content-images\"") {
                if let number = line.split(separator: " ").last.flatMap({ Double($0) }) { return Int(number) }
            }
            return 0
        }
        return (value("yedi_cache_hits_total"), value("yedi_cache_misses_total"))
    }
}

/// The header parser on its own: every accepted format and the ways a header can be broken.
final class ImageFormatTests: XCTestCase {
    func testTheFormatsAndTheirSizes() {
        XCTAssertEqual(
            try ImageFormat.inspect(SampleImages.png(width: 640, height: 1)).get(),
            ImageInfo(type: .png, width: 640, height: 1))
        XCTAssertEqual(
            try ImageFormat.inspect(SampleImages.jpeg(width: 1080, height: 1350)).get(),
            ImageInfo(type: .jpeg, width: 1080, height: 1350))
        var progressive = SampleImages.jpeg(width: 33, height: 17)
        let sof = progressive.firstIndex(of: 0xC0)!
        progressive[sof] = 0xC2
        XCTAssertEqual(try ImageFormat.inspect(progressive).get(), ImageInfo(type: .jpeg, width: 33, height: 17))
        XCTAssertEqual(
            try ImageFormat.inspect(SampleImages.webp(width: 4_000, height: 3_000)).get(),
            ImageInfo(type: .webp, width: 4_000, height: 3_000))
        var extended = Array("RIFF".utf8) + [22, 0, 0, 0] + Array("WEBP".utf8) + Array("VP8X".utf8) + [10, 0, 0, 0]
        extended += [0, 0, 0, 0] + [0x7F, 0x02, 0x00] + [0xDF, 0x01, 0x00]  // 640 × 480
        XCTAssertEqual(try ImageFormat.inspect(extended).get(), ImageInfo(type: .webp, width: 640, height: 480))
    }

    func testBrokenHeadersAreRefused() {
        var zeroWidth = SampleImages.png(width: 1, height: 1)
        zeroWidth[16...19] = [0, 0, 0, 0]
        var noData = SampleImages.png(width: 1, height: 1)
        noData.removeSubrange(33..<(noData.count - 12))  // signature (8) + IHDR (25) … IEND (12)
        let broken: [(String, [UInt8])] = [
            ("zero width", zeroWidth),
            ("no image data", noData),
            ("only the PNG signature", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
            ("only SOI", [0xFF, 0xD8, 0xFF]),
            ("RIFF but short", Array("RIFF".utf8) + [4, 0, 0, 0] + Array("WEBP".utf8)),
            ("GIF", Array("GIF89a".utf8) + [1, 0, 1, 0, 0, 0, 0]),
        ]
        for (name, bytes) in broken {
            if case .success(let info) = ImageFormat.inspect(bytes) { XCTFail("\(name) was accepted as \(info)") }
        }
    }
}
