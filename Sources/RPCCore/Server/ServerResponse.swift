import NIOCore
import ProtoBridge

/// What a call sends when its handler returns, as the interceptors see it on the way out: a unary
/// call's response and the trailers of its END frame.
///
/// The call is answered only after the outermost interceptor returned this, so an interceptor can add
/// trailers, or fail the call by throwing instead, and the caller receives exactly that.
public struct ServerResponse: Sendable {
    /// A unary call's END frame, begun around its encoded response (`ReplyFrame`); nil for a stream.
    var reply: ReplyFrame?
    /// Sent with the call's OK status. (A failed call's trailers are its `RPCError.metadata`.)
    public var trailers: Metadata

    init(reply: ReplyFrame?, trailers: Metadata = [:]) {
        self.reply = reply
        self.trailers = trailers
    }

    /// A response of bytes that were encoded elsewhere (copied into the frame); nil for a stream.
    @usableFromInline
    init(message: ByteBuffer?, trailers: Metadata = [:]) {
        self.init(reply: message.map(ReplyFrame.init(payload:)), trailers: trailers)
    }

    /// A unary call's encoded response message (a view of the reply frame); nil for a streaming call,
    /// whose messages left while its handler ran.
    public var message: ByteBuffer? { reply?.message }

    /// The encoded size of a unary response; 0 for a stream.
    public var messageBytes: Int { reply?.messageBytes ?? 0 }

    /// The call's END frame, finished: the trailers appended after the response, where it was encoded.
    /// Takes the frame out of the response (which must hold the only copy of it, or the append copies).
    @usableFromInline
    mutating func takeEndFrame(callID: UInt64) -> ServerCallOutcome {
        let messageBytes = reply?.messageBytes
        do {
            let frame =
                if reply != nil {
                    try reply!.finish(callID: callID, kind: .end, trailers: trailers)
                } else {
                    try ReplyFrame.finishedWithoutMessage(callID: callID, kind: .end, trailers: trailers)
                }
            reply = nil
            return .answered(frame: frame, messageBytes: messageBytes)
        } catch {
            return .unencodable(error, messageBytes: messageBytes)
        }
    }
}

/// What a call's task hands its connection when the handler and the interceptors returned.
@usableFromInline
enum ServerCallOutcome: Sendable {
    /// Its END frame, ready to write (counted against the memory budget), and a unary response's size.
    case answered(frame: ByteBuffer, messageBytes: Int?)
    /// Its trailers could not be encoded (a NUL in them): the call still ends, as INTERNAL.
    case unencodable(ProtoEncodingError, messageBytes: Int?)
    /// The handler (or an interceptor) failed.
    case failed(RPCError)
}
