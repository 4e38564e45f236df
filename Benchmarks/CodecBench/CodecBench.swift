import ArgumentParser
import CAllocationCounter
import ProtoBridge
import RPCCore
import YediProto

/// Encode/decode cost of a feed page (20 posts, 3 photo URLs each, Korean text) through protobuf-c.
///
///     swift run -c release codec-bench
@main
struct CodecBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "codec-bench",
        abstract: "Measures ns/op and allocations/op of encoding and decoding a feed page."
    )

    @Option(help: "Operations per measured round.")
    var iterations = 20_000

    @Option(help: "Measured rounds; the median is reported.")
    var rounds = 5

    @Option(help: "feed-page, echo-frame or all.")
    var workload = "all"

    func run() throws {
        if workload == "all" || workload == "feed-page" { try feedPage() }
        if workload == "all" || workload == "echo-frame" { try echoFrame() }
    }

    func feedPage() throws {
        let page = Self.feedPage()
        let bytes = try page.serializedBytes()
        let decoded = try YediContent.FeedPage(serializedBytes: bytes)
        precondition(decoded == page, "the feed page does not round-trip")

        let encode = try measure { _ = try page.serializedBytes() }
        let decode = try measure { _ = try YediContent.FeedPage(serializedBytes: bytes) }
        for (name, result) in [("encode", encode), ("decode", decode)] {
            print(
                #"{"bench":"feed-page-\#(name)","ns_per_op":\#(result.nanoseconds),"#
                    + #""allocs_per_op":\#(result.allocations),"bytes":\#(bytes.count),"#
                    + #""posts":20,"photos_per_post":3,"iterations":\#(iterations),"rounds":\#(rounds)}"#
            )
        }

    }

    /// The RPC envelope of a 64-byte echo, as every call sends and receives it.
    func echoFrame() throws {
        let echo = try YediEcho.EchoRequest(payload: [UInt8](repeating: 0x61, count: 64)).serializedBytes()
        let frame = YediRPC.Frame(callID: 12_345, kind: .request, method: "/yedi.echo.Echo/Echo", payload: echo)
        let frameBytes = try frame.serializedBytes()
        let frameEncode = try measure { _ = try frame.serializedBytes() }
        let frameDecode = try measure { _ = try YediRPC.Frame(serializedBytes: frameBytes) }
        for (name, result) in [("encode", frameEncode), ("decode", frameDecode)] {
            print(
                #"{"bench":"echo-frame-\#(name)","ns_per_op":\#(result.nanoseconds),"#
                    + #""allocs_per_op":\#(result.allocations),"bytes":\#(frameBytes.count)}"#
            )
        }
    }

    struct Result {
        var nanoseconds: Int
        var allocations: Double
    }

    /// Median ns/op over `rounds`, and allocations/op of one round, after a warm-up round.
    func measure(_ operation: () throws -> Void) throws -> Result {
        for _ in 0..<iterations / 10 { try operation() }
        var nanoseconds: [Int] = []
        var allocations: [Double] = []
        let clock = ContinuousClock()
        for _ in 0..<rounds {
            yedi_allocations_start()
            let start = clock.now
            for _ in 0..<iterations { try operation() }
            let elapsed = clock.now - start
            allocations.append(Double(yedi_allocations_stop()) / Double(iterations))
            let total = elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
            nanoseconds.append(Int(total) / iterations)
        }
        return Result(nanoseconds: nanoseconds.sorted()[rounds / 2], allocations: allocations.sorted()[rounds / 2])
    }

    static func feedPage() -> YediContent.FeedPage {
        let titles = ["레이어드컷으로 가볍게", "애즈펌 볼륨 살리기", "뿌리염색 자연스럽게", "허쉬컷 스타일링 팁"]
        let posts = (0..<20).map { (index: Int) -> YediContent.Post in
            let photos: [YediCommon.ImageRef] = (0..<3).map { photo in
                YediCommon.ImageRef(
                    id: "img-\(index)-\(photo)",
                    url: "https://cdn.yedi.example/posts/\(index)/photo-\(photo).jpg",
                    width: 1080,
                    height: 1350
                )
            }
            let title = "\(titles[index % titles.count]) #\(index)"
            let createdAt = 1_697_778_000_000 - Int64(index) * 3_600_000
            return YediContent.Post(
                id: "6f1c2d3e-4b5a-4c6d-8e7f-0000000000\(10 + index)",
                designerID: "d3f4a5b6-c7d8-4e9f-a0b1-c2d3e4f5a6b7",
                title: title,
                description: "손상이 적고 관리법을 잘 알려드려요. 상담은 채팅으로 편하게 문의 주세요 💇‍♀️",
                priceKRW: 45_000 + Int64(index) * 1_000,
                category: .cut,
                photos: photos,
                likeCount: Int64(index * 7),
                liked: index % 2 == 0,
                createdAtMs: createdAt,
                updatedAtMs: 1_697_778_000_000,
                author: .init(name: "박지호", profileImageID: "a1b2c3d4-0000-4000-8000-000000000001")
            )
        }
        return YediContent.FeedPage(posts: posts, page: .init(nextCursor: "cursor-20"))
    }
}
