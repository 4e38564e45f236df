import Logging
import NIOCore
import NIOHTTP1

/// One connection's HTTP/1.1 exchange, after NIO's decoder and pipelining handler: answers each request once
/// it has been read in full, honours keep-alive, and discards request bodies while counting them, so that an
/// oversized one is refused with 413 and the connection closed instead of being read to the end.
///
/// A response is written only while the socket's queue is under its high-water mark (else once the client
/// has read enough), so a client that pipelines requests without reading the answers cannot make the
/// server queue them all.
final class HTTPExchangeHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        /// Between requests.
        case idle
        /// Reading a request's body, which only gets counted.
        case receiving(HTTPRequestHead, bodyBytes: Int)
        /// The responder is working on the response to this request.
        case responding
        /// A request was refused and the connection is closing; whatever else arrives is dropped.
        case closing
    }

    private let responder: any HTTPResponder
    private let maxRequestBodyBytes: Int
    private let logger: Logger
    private var state = State.idle
    /// A response ready while the socket was full, written when it drains.
    private var waitingForWritability: (HTTPServerResponse, HTTPRequestHead)?

    init(responder: any HTTPResponder, maxRequestBodyBytes: Int, logger: Logger) {
        self.responder = responder
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
            state = .responding
            respond(to: head, context: context)
        case (.body, _), (.end, _):
            // NIO's decoder always sends a head first, and its pipelining handler holds the next request
            // back until this one's response has been written; nothing to answer.
            break
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let (response, head) = waitingForWritability {
            waitingForWritability = nil
            send(response, to: head, keepAlive: head.isKeepAlive, context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            logger.debug("closing an idle connection")
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Malformed requests have had their 400 from NIO's HTTPServerProtocolErrorHandler by now.
        logger.debug("HTTP connection failed", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let answered = responder.respond(to: head, on: context.eventLoop).hop(to: context.eventLoop)
        answered.assumeIsolated().whenComplete { result in
            guard case .responding = self.state else { return }  // closed meanwhile
            self.state = .idle
            let response: HTTPServerResponse
            switch result {
            case .success(let made): response = made
            case .failure(let error):
                self.logger.error("HTTP responder failed", metadata: ["uri": "\(head.uri)", "error": "\(error)"])
                response = .text(.internalServerError, "internal error")
            }
            if context.channel.isWritable {
                self.send(response, to: head, keepAlive: head.isKeepAlive, context: context)
            } else {
                self.waitingForWritability = (response, head)
            }
        }
    }

    private func refuseTooLarge(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        state = .closing
        logger.debug("refused an oversized request body", metadata: ["uri": "\(head.uri)"])
        send(.payloadTooLarge, to: head, keepAlive: false, context: context)
    }

    private func send(
        _ response: HTTPServerResponse,
        to request: HTTPRequestHead,
        keepAlive: Bool,
        context: ChannelHandlerContext
    ) {
        var headers = response.headers
        // A 304 describes the representation the client has; it carries no body and no length of its own.
        if response.status != .notModified {
            headers.add(name: "content-length", value: String(response.body.readableBytes))
        }
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
