import AsyncHTTPClient
import BenchSupport
import Foundation
import Histogram
import NIOCore
import NIOSSL
import RPCCore
import YediImaging
import YediProto

/// The image variants and the image port, on a fresh ContentService process (default cache sizes):
///
/// - `image-peak-memory`: the process's peak RSS (VmHWM) after start, then after uploading a 20-megapixel
///   photo (5472×3648, a JPEG, then a PNG): what resizing one costs at most.
/// - `image-upload`: uploads/s of a 12-megapixel JPEG (4032×3024, a phone's) by `--upload-clients`
///   clients, each upload making both variants (four different photos in turn; every upload resizes).
/// - `image-url-get`: GETs/s of a post photo's public URL (the large variant) over HTTPS with keep-alive
///   by `--get-clients` clients, the variant cached (warm).
struct ImageVariantBench {
    let bench: ContentBench
    let work: URL
    let pki: String
    let accountPort: Int

    func run(token: String) async throws {
        let content = try await ContentBench.startContentService(
            work: work, pki: pki, folder: "content-images", accountPort: accountPort,
            arguments: [
                "--image-port", "\(try ServiceProcess.freePort())",
                "--quota", "uploads.day-bytes=1000000000000", "--quota", "uploads.total-bytes=1000000000000",
            ])
        defer { try? content.stop() }
        try await withRPCClient(configuration: content.clientConfiguration(maxFrameBytes: 11 << 20)) { client in
            let api = YediContent.ContentService.Client(client)
            try await peakMemory(api, content, token: token)
            try await uploads(api, token: token)
            try await urlGets(api, token: token)
        }
    }

    private func peakMemory(_ api: YediContent.ContentService.Client, _ content: ServiceProcess, token: String)
        async throws
    {
        let started = try content.peakResidentBytes()
        let (width, height) = (5_472, 3_648)
        // The PNG without the fine texture: with it, 20 Mpx of PNG is over the 10 MiB upload limit.
        for (format, name, texture) in [(PixelEncoder.Format.jpeg(quality: 90), "jpeg", true), (.png, "png", false)] {
            let photo = try PixelEncoder.encode(
                SyntheticPhoto.pixels(width: width, height: height, seed: 0, texture: texture), width: width,
                height: height,
                bands: 3, as: format)
            guard photo.count <= 10 << 20 else { throw BenchError("the 20 Mpx \(name) is over 10 MiB") }
            let start = ContinuousClock.now
            _ = try await api.uploadImage(.init(data: photo), options: Self.bearer(token))
            let seconds = Figures.seconds(ContinuousClock.now - start)
            let peak = try content.peakResidentBytes()
            print(
                #"{"bench":"image-peak-memory","format":"\#(name)","pixels":\#(width * height),"#
                    + #""bytes":\#(photo.count),"upload_s":\#(Figures.format(seconds)),"#
                    + #""vmhwm_at_start_mib":\#(Figures.format(Double(started) / 1_048_576)),"#
                    + #""vmhwm_after_mib":\#(Figures.format(Double(peak) / 1_048_576))}"#)
        }
    }

    private func uploads(_ api: YediContent.ContentService.Client, token: String) async throws {
        let (width, height) = (4_032, 3_024)
        var photos: [[UInt8]] = []
        for seed in 0..<4 {
            photos.append(
                try PixelEncoder.encode(
                    SyntheticPhoto.pixels(width: width, height: height, seed: seed * 50), width: width, height: height,
                    bands: 3, as: .jpeg(quality: 90)))
        }
        let photoSet = photos
        let (seconds, count, histogram) = try await closedLoop(
            clients: bench.uploadClients, seconds: bench.variantSeconds
        ) { client, index in
            let ref = try await api.uploadImage(
                .init(data: photoSet[(client + index) % photoSet.count]), options: Self.bearer(token))
            guard !ref.url.isEmpty else { throw BenchError("an upload came back without a URL") }
        }
        print(
            #"{"bench":"image-upload","pixels":\#(width * height),"bytes":\#(photos[0].count),"#
                + #""clients":\#(bench.uploadClients),"uploads":\#(count),"#
                + #""per_second":\#(Figures.format(Double(count) / seconds)),"#
                + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"variants":2,"tls":true}"#)
    }

    private func urlGets(_ api: YediContent.ContentService.Client, token: String) async throws {
        let photo = try await api.uploadImage(
            .init(
                data: try PixelEncoder.encode(
                    SyntheticPhoto.pixels(width: 3_000, height: 2_000, seed: 9), width: 3_000, height: 2_000, bands: 3,
                    as: .jpeg(quality: 90))), options: Self.bearer(token))
        let post = try await api.createPost(
            .init(title: "벤치", description: "사진", priceKRW: 1, category: .cut, photoIDs: [photo.id]),
            options: Self.bearer(token))
        guard let url = post.photos.first?.url, !url.isEmpty else { throw BenchError("the post has no photo URL") }
        var tls = NIOSSL.TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(pki + "/ca.pem")
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = bench.getClients
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        defer { _ = http.shutdown() }
        let size = try await Self.get(http, url)  // warms the cache
        let (seconds, count, histogram) = try await closedLoop(
            clients: bench.getClients, seconds: bench.variantSeconds
        ) { _, _ in
            guard try await Self.get(http, url) == size else { throw BenchError("a GET came back changed") }
        }
        print(
            #"{"bench":"image-url-get","cache":"warm","bytes":\#(size),"clients":\#(bench.getClients),"#
                + #""gets":\#(count),"per_second":\#(Figures.format(Double(count) / seconds)),"#
                + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"https":true}"#)
    }

    private static func get(_ http: HTTPClient, _ url: String) async throws -> Int {
        let response = try await http.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
        guard response.status == .ok else { throw BenchError("GET \(url): \(response.status)") }
        return try await response.body.collect(upTo: 16 << 20).readableBytes
    }

    private static func bearer(_ token: String) -> CallOptions {
        CallOptions(timeout: .seconds(120), metadata: ["authorization": "Bearer \(token)"])
    }
}
