import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import YediImaging

/// A real HTTPS client (AsyncHTTPClient over NIOSSL, trusting the test CA) for the image port.
final class ImageHTTPClient: Sendable {
    struct Response: Sendable {
        var status: HTTPResponseStatus
        var headers: HTTPHeaders
        var body: [UInt8]

        func header(_ name: String) -> String? { headers.first(name: name) }
    }

    private let client: HTTPClient

    init(trusting caFile: String) {
        var tls = NIOSSL.TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(caFile)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
    }

    func fetch(_ url: String, method: HTTPMethod = .GET, headers: [(String, String)] = []) async throws -> Response {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await client.execute(request, timeout: .seconds(20))
        let body = try await response.body.collect(upTo: 16 << 20)
        return Response(status: response.status, headers: response.headers, body: Array(buffer: body))
    }

    func shutdown() async throws {
        try await client.shutdown()
    }
}

/// Photos made in code with libvips: smooth gradients with a pattern, so they compress like photos, not
/// like noise.
enum TestPhotos {
    static func pixels(width: Int, height: Int, bands: Int, seed: Int = 0) -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height * bands)
        for y in 0..<height {
            for x in 0..<width {
                let base = (y * width + x) * bands
                pixels[base] = UInt8(truncatingIfNeeded: x * 255 / max(1, width - 1) + seed)
                if bands >= 2 { pixels[base + 1] = UInt8(truncatingIfNeeded: y * 255 / max(1, height - 1)) }
                if bands >= 3 { pixels[base + 2] = ((x / 40 + y / 40) % 2 == 0) ? 200 : 60 }
                if bands == 4 { pixels[base + 3] = x < width / 2 ? 255 : 0 }
            }
        }
        return pixels
    }

    static func jpeg(width: Int, height: Int, seed: Int = 0) throws -> [UInt8] {
        try PixelEncoder.encode(
            pixels(width: width, height: height, bands: 3, seed: seed), width: width, height: height, bands: 3,
            as: .jpeg(quality: 90))
    }

    /// With an alpha channel: the right half is transparent.
    static func pngWithAlpha(width: Int, height: Int) throws -> [UInt8] {
        try PixelEncoder.encode(
            pixels(width: width, height: height, bands: 4), width: width, height: height, bands: 4, as: .png)
    }

    static func webp(width: Int, height: Int) throws -> [UInt8] {
        try PixelEncoder.encode(
            pixels(width: width, height: height, bands: 3), width: width, height: height, bands: 3, as: .webp)
    }
}
