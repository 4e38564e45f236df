import NIOCore
import ProtoBridge

/// A running call as its handler task sees it: the way back to the connection that carries it.
///
/// Everything that touches the connection hops to its event loop (usually the task already runs
/// there: handler tasks prefer the connection's loop as their executor). A value, not an object: it is
/// stored inside the call's task (and a stream's `RPCWriter`), so it costs no allocation of its own.
@usableFromInline
struct ServerCallHandle: Sendable {
    @usableFromInline let id: UInt64
    private let connection: NIOLoopBound<ServerConnectionHandler>
    private let maxPayloadBytes: Int
    /// The connection's loop's buffers of written replies, encoded into again when on that loop.
    private let replyBuffers: ReplyBufferPool

    init(
        id: UInt64, connection: NIOLoopBound<ServerConnectionHandler>, maxPayloadBytes: Int,
        replyBuffers: ReplyBufferPool
    ) {
        self.id = id
        self.connection = connection
        self.maxPayloadBytes = maxPayloadBytes
        self.replyBuffers = replyBuffers
    }

    /// Encodes a unary call's response into its END frame (`ReplyFrame`), to be finished once the
    /// interceptors returned; a message the client could not receive is the server's fault.
    @usableFromInline
    func encodeResponse(_ message: some ProtoMessage) throws(RPCError) -> ServerResponse {
        ServerResponse(
            reply: try ReplyFrame.encode(message, maxPayloadBytes: maxPayloadBytes, reusing: replyBuffers.take()))
    }

    /// Encodes a stream's message into its MESSAGE frame, finished: the frame and the message's size.
    func encodeMessage(_ message: some ProtoMessage) throws(RPCError) -> (frame: ByteBuffer, messageBytes: Int) {
        var reply = try ReplyFrame.encode(message, maxPayloadBytes: maxPayloadBytes, reusing: replyBuffers.take())
        do {
            return (try reply.finish(callID: id, kind: .message), reply.messageBytes)
        } catch {
            throw RPCError(code: .internalError, message: "the message could not be encoded")
        }
    }

    /// The handler and the interceptors returned: answers the call (unless it already ended) with the
    /// response or the error, and frees its slot under the concurrency limit.
    @usableFromInline
    func handlerReturned(_ outcome: ServerCallOutcome) {
        let loop = connection.eventLoop
        // Usually on the loop already (the task's executor preference): no closure to allocate then.
        if loop.inEventLoop {
            connection.value.handlerReturned(id, outcome: outcome)
        } else {
            let (id, connection) = (id, connection)
            loop.execute { connection.value.handlerReturned(id, outcome: outcome) }
        }
    }

    /// Sends one message of a streaming call (its finished MESSAGE frame), waiting for flow-control
    /// credit and writability.
    func send(_ frame: ByteBuffer, messageBytes: Int) async throws {
        let write = StreamWrite()
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                onLoop {
                    $0.sendStreamMessage(
                        self.id, frame: frame, messageBytes: messageBytes, write: write, continuation: continuation)
                }
            }
        } onCancel: {
            write.cancel()
            onLoop { $0.abandonStreamWrite(self.id, write) }
        }
    }

    private func onLoop(_ body: @escaping @Sendable (ServerConnectionHandler) -> Void) {
        let loop = connection.eventLoop
        if loop.inEventLoop {
            body(connection.value)
        } else {
            loop.execute { body(self.connection.value) }
        }
    }
}
