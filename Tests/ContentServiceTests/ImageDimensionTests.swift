import Foundation
import RPCCore
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

/// Tiny files whose headers claim huge sizes: refused from the header, before any pixel is decoded, so an
/// upload of a few hundred bytes cannot make a decoder downstream allocate gigabytes.
final class ImageDimensionTests: XCTestCase {
    /// A 1×1 PNG whose IHDR claims `width`×`height` (the CRC is not checked, as decoders differ on it).
    static func png(claiming width: Int, _ height: Int) -> [UInt8] {
        var bytes = SampleImages.png(width: 1, height: 1)
        bytes[16..<24] = ArraySlice(be32(width) + be32(height))
        return bytes
    }

    /// An 8×8 baseline JPEG whose SOF0 claims `width`×`height`.
    static func jpeg(claiming width: Int, _ height: Int) -> [UInt8] {
        var bytes = SampleImages.jpeg(width: 8, height: 8)
        let sof = bytes.indices.first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xC0 }!
        bytes[(sof + 5)..<(sof + 9)] = ArraySlice(be16(height) + be16(width))
        return bytes
    }

    /// A lossy (VP8) WebP header claiming `width`×`height` (14 bits each).
    static func vp8(claiming width: Int, _ height: Int) -> [UInt8] {
        let payload: [UInt8] = [0, 0, 0, 0x9D, 0x01, 0x2A] + le16(width) + le16(height) + [0, 0]
        let chunk = Array("VP8 ".utf8) + le32(payload.count) + payload
        return Array("RIFF".utf8) + le32(4 + chunk.count) + Array("WEBP".utf8) + chunk
    }

    /// An extended (VP8X) WebP header claiming `width`×`height` (24 bits each).
    static func vp8x(claiming width: Int, _ height: Int) -> [UInt8] {
        let payload: [UInt8] = [0, 0, 0, 0] + Array(le32(width - 1).prefix(3)) + Array(le32(height - 1).prefix(3))
        let chunk = Array("VP8X".utf8) + le32(payload.count) + payload
        return Array("RIFF".utf8) + le32(4 + chunk.count) + Array("WEBP".utf8) + chunk
    }

    func testHeadersClaimingMoreThan8192PxASideOr40MegapixelsAreRefused() {
        let refused: [(String, [UInt8])] = [
            ("PNG 20000×20000", Self.png(claiming: 20_000, 20_000)),
            ("PNG 8193×1", Self.png(claiming: 8_193, 1)),
            ("PNG 8192×8192 (67 Mpx)", Self.png(claiming: 8_192, 8_192)),
            ("PNG 2^31×1", Self.png(claiming: 1 << 31, 1)),
            ("JPEG 20000×20000", Self.jpeg(claiming: 20_000, 20_000)),
            ("JPEG 1×65535", Self.jpeg(claiming: 1, 65_535)),
            ("WebP VP8 16383×16383", Self.vp8(claiming: 16_383, 16_383)),
            ("WebP VP8L 16384×16384", SampleImages.webp(width: 16_384, height: 16_384)),
            ("WebP VP8L 8192×4883 (40.002 Mpx)", SampleImages.webp(width: 8_192, height: 4_883)),
            ("WebP VP8X 20000×20000", Self.vp8x(claiming: 20_000, 20_000)),
            ("WebP VP8X 2^24×2^24", Self.vp8x(claiming: 1 << 24, 1 << 24)),
        ]
        for (name, bytes) in refused {
            XCTAssertLessThan(bytes.count, 1_000, "\(name) is a tiny file")
            switch ImageFormat.inspect(bytes) {
            case .success(let info): XCTFail("\(name) was accepted as \(info)")
            case .failure(let problem):
                XCTAssertTrue(problem.description.contains("8192 px per side and 40 megapixels"), "\(name): \(problem)")
            }
        }
    }

    func testTheLargestAllowedSizesPass() {
        let allowed: [(String, [UInt8], Int, Int)] = [
            ("PNG 8192×4882 (39.99 Mpx)", Self.png(claiming: 8_192, 4_882), 8_192, 4_882),
            ("JPEG 4882×8192", Self.jpeg(claiming: 4_882, 8_192), 4_882, 8_192),
            ("WebP VP8 8000×5000", Self.vp8(claiming: 8_000, 5_000), 8_000, 5_000),
            ("WebP VP8X 8192×1", Self.vp8x(claiming: 8_192, 1), 8_192, 1),
        ]
        for (name, bytes, width, height) in allowed {
            XCTAssertEqual(try? ImageFormat.inspect(bytes).get().width, width, name)
            XCTAssertEqual(try? ImageFormat.inspect(bytes).get().height, height, name)
        }
    }

    func testAnUploadClaiming20000PxIsInvalidArgumentNamingDataAndTheLimit() async throws {
        let fixture = try await ContentFixture.start()
        let customer = try await fixture.customer()
        do {
            _ = try await fixture.api.uploadImage(
                .init(data: Self.png(claiming: 20_000, 20_000)), options: customer.options)
            XCTFail("a PNG claiming 20000×20000 was accepted")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .invalidArgument)
            XCTAssertTrue(error.message.hasPrefix("data: "), error.message)
            XCTAssertTrue(error.message.contains("8192 px per side and 40 megapixels"), error.message)
        }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: fixture.imageFolder.path)) ?? []
        XCTAssertEqual(files, [], "nothing was stored")
        try await fixture.stop()
    }

    private static func be32(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
    private static func be16(_ value: Int) -> [UInt8] { [8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
    private static func le16(_ value: Int) -> [UInt8] { [0, 8].map { UInt8(truncatingIfNeeded: value >> $0) } }
    private static func le32(_ value: Int) -> [UInt8] { [0, 8, 16, 24].map { UInt8(truncatingIfNeeded: value >> $0) } }
}
