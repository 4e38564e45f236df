import NIOCore
import NIOHTTP1
import NIOPosix

/// A response as a test reads it.
struct HTTPTestResponse {
    var head: HTTPResponseHead
    var body: String

    var status: HTTPResponseStatus { head.status }

    func header(_ name: String) -> String? {
        head.headers.first(name: name)
    }
}

enum HTTPTestClientError: Error {
    case unexpectedPart(HTTPClientResponsePart)
    case closedMidResponse
}

/// One client connection over loopback, made with NIO's own HTTP/1.1 client handlers: requests go one after the
/// other on the same connection, and a test can ask whether the server has closed it.
final class HTTPTestConnection {
    private var responses: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
    private let requests: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>

    private init(
        responses: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator,
        requests: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>
    ) {
        self.responses = responses
        self.requests = requests
    }

    /// Connects to `127.0.0.1:port`, runs `body` with the connection, then closes it.
    static func withConnection<Result: Sendable>(
        port: Int,
        _ body: (HTTPTestConnection) async throws -> Result
    ) async throws -> Result {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                        wrappingChannelSynchronously: channel
                    )
                }
            }
        var result: Result?
        do {
            try await channel.executeThenClose { inbound, outbound in
                result = try await body(HTTPTestConnection(responses: inbound.makeAsyncIterator(), requests: outbound))
            }
        } catch ChannelError.ioOnClosedChannel where result != nil {
            // The server closed the connection first (as some tests expect); closing it again is moot.
        }
        return result!
    }

    /// Sends a request and reads its response.
    func send(
        _ method: HTTPMethod,
        _ uri: String,
        headers: [(String, String)] = [],
        body: String? = nil
    ) async throws -> HTTPTestResponse {
        try await sendHead(method, uri, headers: headers, contentLength: body?.utf8.count ?? 0)
        if let body {
            try await sendBody(body)
        }
        do {
            try await requests.write(.end(nil))
        } catch ChannelError.ioOnClosedChannel {
            // A head saying the body is empty is a whole request to the server, which may answer and
            // close (`connection: close`) before this end (zero bytes on the wire) is written; the answer
            // is still there to read.
        }
        return try await readResponse()
    }

    /// Starts a request, leaving its body and end to the test.
    func sendHead(_ method: HTTPMethod, _ uri: String, headers: [(String, String)] = [], contentLength: Int)
        async throws
    {
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: uri)
        head.headers.add(name: "host", value: "localhost")
        head.headers.add(contentsOf: headers)
        head.headers.add(name: "content-length", value: String(contentLength))
        try await requests.write(.head(head))
    }

    private func sendBody(_ text: String) async throws {
        try await requests.write(.body(.byteBuffer(ByteBuffer(string: text))))
    }

    func readResponse() async throws -> HTTPTestResponse {
        let first = try await responses.next(isolation: #isolation)
        guard case .head(let head) = first else {
            throw first.map(HTTPTestClientError.unexpectedPart) ?? .closedMidResponse
        }
        var body = ByteBuffer()
        while let part = try await responses.next(isolation: #isolation) {
            switch part {
            case .body(var chunk):
                body.writeBuffer(&chunk)
            case .end:
                return HTTPTestResponse(head: head, body: String(buffer: body))
            case .head:
                throw HTTPTestClientError.unexpectedPart(part)
            }
        }
        throw HTTPTestClientError.closedMidResponse
    }

    /// Whether the server closed the connection: the next read finds the end of the stream (or a reset) rather
    /// than another response.
    func serverClosed() async -> Bool {
        do {
            return try await responses.next(isolation: #isolation) == nil
        } catch {
            return true
        }
    }
}
