import Foundation
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediCrypto
import YediImaging
import YediProto

@testable import ContentService

/// Every upload gets two JPEG variants made with libvips (longest side ≤ 1280 px and ≤ 400 px),
/// content-addressed in `<data>/image-variants/` and removed with their image; what libvips cannot decode,
/// or sees over the pixel limit, is refused naming `data`.
final class ImageVariantTests: XCTestCase {
    private func variantSizes(_ fixture: ContentFixture) throws -> [[Int]] {
        try FileManager.default.contentsOfDirectory(atPath: fixture.variantFolder.path).sorted().map { name in
            let bytes = try XCTUnwrap(
                FileManager.default.contents(atPath: fixture.variantFolder.appendingPathComponent(name).path))
            XCTAssertEqual(SHA256.hex(SHA256.hash(Array(bytes))), name, "named by the hash of its bytes")
            XCTAssertEqual(Array(bytes.prefix(3)), [0xFF, 0xD8, 0xFF], "a JPEG")
            let size = try ImageHeader.size(of: Array(bytes))
            return [size.width, size.height]
        }.sorted { $0[0] > $1[0] }
    }

    func testALargeJPEGGetsA1280AndA400PixelVariant() async throws {
        let fixture = try await ContentFixture.start()
        let customer = try await fixture.customer()
        let ref = try await fixture.upload(customer, try TestPhotos.jpeg(width: 3_000, height: 2_000))
        XCTAssertEqual([ref.width, ref.height], [3_000, 2_000], "the ref keeps the original's size")
        XCTAssertEqual(try variantSizes(fixture), [[1_280, 853], [400, 267]])
        try await fixture.stop()
    }

    func testAPortraitPNGWithAlphaAndAWebPBecomeOpaqueJPEGsAndSmallOnesAreNotEnlarged() async throws {
        let fixture = try await ContentFixture.start()
        let customer = try await fixture.customer()
        _ = try await fixture.upload(customer, try TestPhotos.pngWithAlpha(width: 900, height: 1_600))
        XCTAssertEqual(
            try variantSizes(fixture), [[720, 1_280], [225, 400]], "portrait: the height is the longest side")
        let small = try await fixture.upload(customer, try TestPhotos.webp(width: 30, height: 20))
        XCTAssertEqual([small.width, small.height], [30, 20])
        XCTAssertTrue(try variantSizes(fixture).contains([30, 20]), "never enlarged")
        try await fixture.stop()
    }

    func testBytesThatOnlyLookLikeAnImageAreRefusedNamingData() async throws {
        let fixture = try await ContentFixture.start()
        let customer = try await fixture.customer()
        // A WebP header with a few payload bytes: the header parses, the pixels do not.
        let error = await rpcError {
            _ = try await fixture.upload(customer, SampleImages.webp(width: 30, height: 20))
        }
        XCTAssertEqual(error?.code, .invalidArgument)
        XCTAssertTrue(error?.message.hasPrefix("data: ") ?? false, error?.message ?? "")
        let stored = try FileManager.default.contentsOfDirectory(atPath: fixture.imageFolder.path)
        XCTAssertEqual(stored, [], "nothing was stored")
        try await fixture.stop()
    }

    func testLibvipsRefusesAHeaderOverThePixelLimitBeforeDecoding() async throws {
        // 20000×20000 claimed by a 1×1 PNG's header (with its CRC right, so libpng reads it): libvips reads
        // the header only, and the maker stops there.
        var claiming = ImageDimensionTests.png(claiming: 20_000, 20_000)
        claiming[29..<33] = ArraySlice(Self.crc32(Array(claiming[12..<29])))
        let started = ContinuousClock.now
        do {
            _ = try await ImageVariantMaker.make(from: claiming)
            XCTFail("a 400-megapixel header was decoded")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .invalidArgument)
            XCTAssertTrue(error.message.hasPrefix("data: 20000×20000 px is over the limit"), error.message)
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2), "refused from the header, not by decoding")
    }

    /// PNG's CRC-32 of a chunk's type and data, big-endian.
    private static func crc32(_ data: [UInt8]) -> [UInt8] {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        crc = ~crc
        return [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: crc >> $0) }
    }

    func testVariantsAreSharedByTheSameBytesAndRemovedWithTheirLastImage() async throws {
        let fixture = try await ContentFixture.start()
        let customer = try await fixture.customer()
        let bytes = try TestPhotos.jpeg(width: 1_600, height: 1_200)
        let first = try await fixture.upload(customer, bytes)
        let second = try await fixture.upload(customer, bytes)
        XCTAssertEqual(first.url.split(separator: "?")[0], second.url.split(separator: "?")[0], "one variant blob")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: fixture.variantFolder.path).count, 2)
        let http = ImageHTTPClient(trusting: fixture.harness.pki.caFile)
        let served = try await http.fetch(first.url)
        XCTAssertEqual(served.status, .ok)

        // Both uploads stay unused past the grace period: rows, original and variants go.
        let env = fixture.content.environment
        let library = try XCTUnwrap(fixture.hooks.library.value)
        let collector = ContentServiceDefinition.imageCollector(
            env, images: library, peers: ContentPeers.live(env.peers))
        fixture.clock.advance(by: 25 * 3_600)
        let removed = try await collector.collect()
        XCTAssertEqual(removed, 2)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: fixture.variantFolder.path), [])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: fixture.imageFolder.path), [])
        let urls = try XCTUnwrap(fixture.hooks.urls.value)
        let name = String(first.url.split(separator: "?")[0].split(separator: "/").last!.dropLast(4))
        let gone = try await http.fetch(urls.url(name, .signed))
        XCTAssertEqual(gone.status, .notFound, "the cached variant was forgotten too")
        try await http.shutdown()
        try await fixture.stop()
    }
}
