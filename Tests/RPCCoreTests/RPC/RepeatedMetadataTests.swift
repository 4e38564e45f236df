import NIOCore
import NIOPosix
import RPCTLS
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// A client repeats the previous request's metadata entries (`same_as_previous`) only to a server that
/// said it remembers them, and every handler still sees its own call's metadata.
final class RepeatedMetadataTests: EchoServerTestCase {
    /// Calls whose metadata changes between them, one after another and many at once on one connection:
    /// each handler sees exactly what its call carried.
    func testEveryHandlerSeesItsOwnCallsMetadataWhateverCameBefore() async throws {
        let token = "Bearer " + String(repeating: "t", count: 300)
        let sets: [Metadata] = [
            ["authorization": token], ["authorization": token], ["authorization": token, "request-id": "r-1"],
            ["authorization": token, "request-id": "r-2"], [:], ["authorization": token], ["request-id": "r-3"],
            ["authorization": "Bearer other", "request-id": "r-3"], ["authorization": token],
        ]
        try await withEcho { echo in
            for (index, metadata) in sets.enumerated() {
                _ = try await echo.echo(.init(text: "one-\(index)"), options: .init(metadata: metadata))
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<90 {
                    group.addTask {
                        _ = try await echo.echo(.init(text: "many-\(index)"), options: .init(metadata: sets[index % 9]))
                    }
                }
                try await group.waitForAll()
            }
        }
        for (index, metadata) in sets.enumerated() {
            let seen = try XCTUnwrap(service.probe.context(of: "one-\(index)")).metadata
            XCTAssertEqual(Self.ownEntries(seen), Array(metadata), "call \(index)")
        }
        for index in 0..<90 {
            let seen = try XCTUnwrap(service.probe.context(of: "many-\(index)")).metadata
            XCTAssertEqual(Self.ownEntries(seen), Array(sets[index % 9]), "call many-\(index)")
        }
    }

    /// A request the client refused before writing it (a NUL in a value) is not what the server
    /// remembers: the next request, whose token equals the refused one's, is not sent as a repeat of it,
    /// and its handler sees its own token, not the one before.
    func testARequestRefusedBeforeItWasWrittenIsNotRepeated() async throws {
        let first = "Bearer " + String(repeating: "a", count: 100)
        let second = "Bearer " + String(repeating: "b", count: 100)
        try await withEcho { echo in
            _ = try await echo.echo(.init(text: "first"), options: .init(metadata: ["authorization": first]))
            do {
                _ = try await echo.echo(
                    .init(text: "refused"),
                    options: .init(metadata: ["authorization": second, "x-bad": "a\u{0}b"], retry: false))
                XCTFail("a NUL in a value was sent")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .invalidArgument)
            }
            _ = try await echo.echo(.init(text: "second"), options: .init(metadata: ["authorization": second]))
        }
        XCTAssertEqual(try XCTUnwrap(service.probe.context(of: "second")).metadata["authorization"], second)
        XCTAssertEqual(try XCTUnwrap(service.probe.context(of: "first")).metadata["authorization"], first)
        XCTAssertNil(service.probe.context(of: "refused"))
    }

    /// On the wire: to a server that announced `remembered_metadata_bytes`, a repeated token is four
    /// bytes; to one that announced nothing, every entry goes out in full.
    func testATokenIsRepeatedOnlyToAServerThatRemembersIt() async throws {
        let token = "Bearer " + String(repeating: "t", count: 300)
        let options = CallOptions(metadata: ["authorization": token, "request-id": "r"], retry: false)
        for announced in [UInt32(2048), 0] {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let requests = LockedValue<[YediRPC.Frame]>([])
            let server = try FrameServer.start(pki: pki, group: group) {
                RecordingHandler(requests: requests, rememberedMetadataBytes: announced)
            }
            try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
                let echo = YediEcho.Echo.Client(client)
                for index in 0..<3 { _ = try await echo.echo(.init(text: "\(index)"), options: options) }
            }
            let echoes = requests.value.filter { $0.method == "/yedi.echo.Echo/Echo" }
            XCTAssertEqual(echoes.count, 3)
            let full: [YediRPC.MetadataEntry] = [
                .init(key: "authorization", value: token), .init(key: "request-id", value: "r"),
            ]
            XCTAssertEqual(echoes.first?.metadata.filter { $0.key != "traceparent" }, full)
            for request in echoes.dropFirst() {
                let entries = request.metadata.filter { $0.key != "traceparent" && !$0.sameAsPrevious }
                let repeats = request.metadata.filter(\.sameAsPrevious).count
                if announced > 0 {
                    XCTAssertGreaterThanOrEqual(repeats, 2, "\(request.metadata)")
                    XCTAssertTrue(entries.allSatisfy { $0.key != "authorization" }, "the token was sent again")
                } else {
                    XCTAssertEqual(repeats, 0)
                    XCTAssertEqual(entries, full)
                }
            }
            try await server.channel.close()
            try await group.shutdownGracefully()
        }
    }

    /// The metadata a call carried, without what the client adds itself (trace context).
    private static func ownEntries(_ metadata: Metadata) -> [Metadata.Entry] {
        metadata.filter { $0.key != "traceparent" }
    }
}

/// Sends SETTINGS with `rememberedMetadataBytes`, records every REQUEST the client sends as the
/// generated decoder reads it, and ends every call OK with an empty response.
private final class RecordingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let requests: LockedValue<[YediRPC.Frame]>
    let rememberedMetadataBytes: UInt32

    init(requests: LockedValue<[YediRPC.Frame]>, rememberedMetadataBytes: UInt32) {
        self.requests = requests
        self.rememberedMetadataBytes = rememberedMetadataBytes
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSEvent {
            var buffer = ByteBuffer()
            try? buffer.writeFrame(
                YediRPC.Frame(
                    kind: .settings, maxConcurrentCalls: 10, maxFrameBytes: 1 << 20,
                    rememberedMetadataBytes: rememberedMetadataBytes))
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let frame = try? YediRPC.Frame(buffer: unwrapInboundIn(data)), frame.kind == .request else { return }
        requests.withLock { $0.append(frame) }
        var buffer = ByteBuffer()
        try? buffer.writeFrame(YediRPC.Frame(callID: frame.callID, kind: .end))
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }
}
