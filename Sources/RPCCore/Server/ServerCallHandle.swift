import NIOCore
import ProtoBridge

/// A running call as its handler task sees it: the way back to the connection that carries it.
///
/// Everything that touches the connection hops to its event loop (usually the task already runs
/// there: handler tasks prefer the connection's loop as their executor).
final class ServerCallHandle: Sendable {
    let id: UInt64
    let method: MethodDescriptor
    private let connection: NIOLoopBound<ServerConnectionHandler>
    private let maxPayloadBytes: Int

    init(id: UInt64, method: MethodDescriptor, connection: NIOLoopBound<ServerConnectionHandler>, maxPayloadBytes: Int)
    {
        self.id = id
        self.method = method
        self.connection = connection
        self.maxPayloadBytes = maxPayloadBytes
    }

    /// Encodes a response; a message the client could not receive is the server's fault.
    func encode(_ message: some ProtoMessage) throws(RPCError) -> ByteBuffer {
        var buffer = ByteBuffer()
        do {
            try message.serialize(into: &buffer)
        } catch {
            throw RPCError(code: .internalError, message: "the response could not be encoded")
        }
        guard buffer.readableBytes <= maxPayloadBytes else {
            throw RPCError(
                code: .resourceExhausted,
                message:
                    "the response (\(buffer.readableBytes) bytes) exceeds the frame limit of \(maxPayloadBytes) bytes"
            )
        }
        return buffer
    }

    /// The handler and the interceptors returned: answers the call (unless it already ended) with the
    /// response or the error, and frees its slot under the concurrency limit.
    func handlerReturned(_ outcome: Result<ServerResponse, RPCError>) {
        onLoop { $0.handlerReturned(self.id, outcome: outcome) }
    }

    /// Sends one message of a streaming call, waiting for flow-control credit and writability.
    func send(_ payload: ByteBuffer) async throws {
        let write = StreamWrite()
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                onLoop { $0.sendStreamMessage(self.id, payload: payload, write: write, continuation: continuation) }
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
