import NIOCore
import NIOPosix

enum RawHTTPConnectionError: Error {
    case closedBefore(expected: String, received: String)
}

/// Bytes in, bytes out, for requests NIO's client encoder would not send as written (HTTP/1.0, hand-made
/// chunking, pipelining, garbage) and for watching the server close the connection.
final class RawHTTPConnection {
    private var incoming: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private let outgoing: NIOAsyncChannelOutboundWriter<ByteBuffer>
    /// Read but not yet handed to the test.
    private var pending = ""

    private init(
        incoming: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator,
        outgoing: NIOAsyncChannelOutboundWriter<ByteBuffer>
    ) {
        self.incoming = incoming
        self.outgoing = outgoing
    }

    /// Connects to `127.0.0.1:port`, runs `body` with the connection, then closes it.
    static func withConnection<Result: Sendable>(
        port: Int,
        _ body: (RawHTTPConnection) async throws -> Result
    ) async throws -> Result {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await body(RawHTTPConnection(incoming: inbound.makeAsyncIterator(), outgoing: outbound))
        }
    }

    /// Writes `request` as it is and returns everything the server sends until it closes the connection.
    static func send(_ request: String, port: Int) async throws -> String {
        try await withConnection(port: port) { connection in
            try await connection.write(request)
            return try await connection.readToEnd()
        }
    }

    func write(_ bytes: String) async throws {
        try await outgoing.write(ByteBuffer(string: bytes))
    }

    /// Reads up to and including the first `marker`, waiting for more bytes as needed.
    func read(through marker: String) async throws -> String {
        while true {
            if let range = pending.range(of: marker) {
                let text = String(pending[..<range.upperBound])
                pending.removeSubrange(..<range.upperBound)
                return text
            }
            guard let chunk = try await incoming.next(isolation: #isolation) else {
                throw RawHTTPConnectionError.closedBefore(expected: marker, received: pending)
            }
            pending += String(buffer: chunk)
        }
    }

    /// Everything until the server closes the connection.
    func readToEnd() async throws -> String {
        while let chunk = try await incoming.next(isolation: #isolation) {
            pending += String(buffer: chunk)
        }
        defer { pending = "" }
        return pending
    }

    /// Whether a new TCP connection to `127.0.0.1:port` is refused.
    static func isRefused(port: Int) async -> Bool {
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port)
                .get()
            try? await channel.close()
            return false
        } catch {
            return true
        }
    }
}
