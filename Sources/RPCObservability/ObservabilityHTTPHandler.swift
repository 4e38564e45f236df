import Logging
import NIOCore
import NIOHTTP1

/// One connection's HTTP/1.1 exchange, after NIO's decoder and pipelining handler: answers each request once
/// it has been read in full, honours keep-alive, and discards request bodies while counting them, so that an
/// oversized one is refused with 413 and the connection closed instead of being read to the end.
final class ObservabilityHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        /// Between requests.
        case idle
        /// Reading a request's body, which only gets counted.
        case receiving(HTTPRequestHead, bodyBytes: Int)
        /// A request was refused and the connection is closing; whatever else arrives is dropped.
        case closing
    }

    private let router: ObservabilityRouter
    private let maxRequestBodyBytes: Int
    private let logger: Logger
    private var state = State.idle

    init(router: ObservabilityRouter, maxRequestBodyBytes: Int, logger: Logger) {
        self.router = router
        self.maxRequestBodyBytes = maxRequestBodyBytes
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), state) {
        case (_, .closing):
            break
        case (.head(let head), _):
            let declaredLength = head.headers.first(name: "content-length").flatMap { Int($0) } ?? 0
            if declaredLength > maxRequestBodyBytes {
                refuseTooLarge(head, context: context)
            } else {
                state = .receiving(head, bodyBytes: 0)
            }
        case (.body(let chunk), .receiving(let head, let bodyBytes)):
            let received = bodyBytes + chunk.readableBytes
            if received > maxRequestBodyBytes {
                refuseTooLarge(head, context: context)
            } else {
                state = .receiving(head, bodyBytes: received)
            }
        case (.end, .receiving(let head, _)):
            state = .idle
            send(router.response(to: head), to: head, keepAlive: head.isKeepAlive, context: context)
        case (.body, .idle), (.end, .idle):
            // NIO's decoder always sends a head first; nothing to answer.
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Malformed requests have had their 400 from NIO's HTTPServerProtocolErrorHandler by now.
        logger.debug("observability connection failed", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    private func refuseTooLarge(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        state = .closing
        logger.debug("refused an oversized request body", metadata: ["uri": "\(head.uri)"])
        send(.payloadTooLarge, to: head, keepAlive: false, context: context)
    }

    private func send(
        _ response: ObservabilityResponse,
        to request: HTTPRequestHead,
        keepAlive: Bool,
        context: ChannelHandlerContext
    ) {
        var headers = response.headers
        headers.add(name: "content-length", value: String(response.body.readableBytes))
        if !keepAlive {
            headers.add(name: "connection", value: "close")
        } else if request.version == .http1_0 {
            headers.add(name: "connection", value: "keep-alive")
        }
        let head = HTTPResponseHead(version: request.version, status: response.status, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if request.method != .HEAD, response.body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(response.body))), promise: nil)
        }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            // Closing only once the response is in the socket: a close fails writes still queued.
            written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }
}
