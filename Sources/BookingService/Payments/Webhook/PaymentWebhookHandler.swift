import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// One webhook connection's exchange, after NIO's HTTP/1.1 decoder: reads a request's body up to
/// `maxBodyBytes` (413 and close past it), hands it with its headers to `receive`, and writes the answer
/// when that finishes. Like the observability server's handler, one request at a time, keep-alive honoured;
/// an idle connection (`IdleStateHandler` in front) and, on shutdown, one with no answer in the making are
/// closed, so neither a silent client nor a drain waits on it.
final class PaymentWebhookHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    typealias Receive = @Sendable (HTTPRequestHead, [UInt8]) async -> (HTTPResponseStatus, String)

    private let receive: Receive
    private let maxBodyBytes: Int
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var closing = false
    /// A request has been read and its answer is not written yet.
    private var answering = false
    /// Shutdown asked this connection to finish: close once the answer in the making is written.
    private var quiescing = false

    init(maxBodyBytes: Int, receive: @escaping Receive) {
        self.maxBodyBytes = maxBodyBytes
        self.receive = receive
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
            if (head.headers.first(name: "content-length").flatMap { Int($0) } ?? 0) > maxBodyBytes {
                refuse(head, context: context)
            }
        case .body(var chunk):
            guard let head else { return }
            body += chunk.readBytes(length: chunk.readableBytes) ?? []
            if body.count > maxBodyBytes { refuse(head, context: context) }
        case .end:
            guard let head else { return }
            self.head = nil
            let (body, receive) = (self.body, self.receive)
            self.body = []
            answering = true
            let promise = context.eventLoop.makePromise(of: (HTTPResponseStatus, String).self)
            promise.completeWithTask { await receive(head, body) }
            promise.futureResult.assumeIsolated().whenSuccess { status, text in
                self.answering = false
                self.send(status, text, to: head, keepAlive: head.isKeepAlive && !self.quiescing, context: context)
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ChannelShouldQuiesceEvent:
            quiescing = true
            if !answering { context.close(promise: nil) }
        case let idle as IdleStateHandler.IdleStateEvent where idle == .read:
            if !answering { context.close(promise: nil) }
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func refuse(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        closing = true
        send(.payloadTooLarge, "request body too large", to: head, keepAlive: false, context: context)
    }

    private func send(
        _ status: HTTPResponseStatus, _ text: String, to request: HTTPRequestHead, keepAlive: Bool,
        context: ChannelHandlerContext
    ) {
        let body = ByteBuffer(string: text + "\n")
        var headers = HTTPHeaders([
            ("content-type", "text/plain; charset=utf-8"), ("content-length", String(body.readableBytes)),
        ])
        if !keepAlive { headers.add(name: "connection", value: "close") }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive { written.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
    }
}
