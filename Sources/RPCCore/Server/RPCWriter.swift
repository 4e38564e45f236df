import ProtoBridge

/// Sends the messages of a server-streaming call.
///
/// `write` waits while the client has not consumed enough of what was sent (per-call flow control) or
/// the connection's send buffer is full, so a slow reader holds the handler back instead of making the
/// server buffer the whole stream. It throws once the call is over (cancelled, deadline passed,
/// connection gone), which ends the handler.
public struct RPCWriter<Message: ProtoMessage>: Sendable {
    let call: ServerCallHandle

    @usableFromInline
    init(call: ServerCallHandle) {
        self.call = call
    }

    public func write(_ message: Message) async throws {
        let (frame, messageBytes) = try call.encodeMessage(message)
        try await call.send(frame, messageBytes: messageBytes)
    }
}
