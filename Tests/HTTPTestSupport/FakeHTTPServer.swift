import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A fake HTTP/1.1 server on loopback for tests of HTTP clients (the outside senders' adapters): it
/// records each request (method, path, headers, body) and answers it from `reply`, or holds the answer
/// back (`.noAnswer`) so that the client's timeout is what ends the request. Request bodies over 1 MiB
/// close the connection. Start it, point the client at `baseURL`, `stop()` it at the end.
public final class FakeHTTPServer: Sendable {
    /// One request as the server read it.
    public struct Request: Sendable {
        public var method: String
        /// The request target (`/v3/mail/send`).
        public var path: String
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        /// The first value of header `name` (any case).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        public var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    /// What the server does with a request.
    public enum Reply: Sendable {
        case respond(status: Int, body: String, contentType: String = "application/json")
        /// Never answers (until `stop()`), to make the client time out.
        case noAnswer
    }

    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let recorded: NIOLockedValueBox<[Request]>

    public let port: Int
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Every request so far, oldest first.
    public var requests: [Request] { recorded.withLockedValue { $0 } }

    /// Starts listening on a free loopback port; `reply` runs on the event loop for each full request.
    public init(reply: @escaping @Sendable (Request) -> Reply) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let recorded = NIOLockedValueBox<[Request]>([])
        let record: @Sendable (Request) -> Void = { request in recorded.withLockedValue { $0.append(request) } }
        do {
            channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        try channel.pipeline.syncOperations.addHandler(
                            FakeHTTPHandler(reply: reply, record: record))
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        self.group = group
        self.recorded = recorded
        self.port = channel.localAddress?.port ?? 0
    }

    /// Closes the listener and every connection (a held-back answer's too).
    public func stop() async throws {
        try await channel.close()
        try await group.shutdownGracefully()
    }
}

/// One connection: gathers a request, records it, writes the scripted reply.
private final class FakeHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let maxBodyBytes = 1 << 20

    let reply: @Sendable (FakeHTTPServer.Request) -> FakeHTTPServer.Reply
    let record: @Sendable (FakeHTTPServer.Request) -> Void
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(
        reply: @escaping @Sendable (FakeHTTPServer.Request) -> FakeHTTPServer.Reply,
        record: @escaping @Sendable (FakeHTTPServer.Request) -> Void
    ) {
        self.reply = reply
        self.record = record
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(let chunk):
            guard body.count + chunk.readableBytes <= Self.maxBodyBytes else {
                context.close(promise: nil)
                return
            }
            body += chunk.readableBytesView
        case .end:
            guard let head else { return }
            self.head = nil
            let request = FakeHTTPServer.Request(
                method: head.method.rawValue, path: head.uri, headers: head.headers.map { ($0.name, $0.value) },
                body: body)
            record(request)
            switch reply(request) {
            case .noAnswer:
                break
            case .respond(let status, let text, let contentType):
                let bytes = ByteBuffer(string: text)
                let headers = HTTPHeaders([
                    ("content-type", contentType), ("content-length", String(bytes.readableBytes)),
                ])
                context.write(
                    wrapOutboundOut(
                        .head(
                            HTTPResponseHead(
                                version: head.version, status: HTTPResponseStatus(statusCode: status), headers: headers)
                        )),
                    promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(bytes))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
