import NIOCore

/// What a call sends when its handler returns, as the interceptors see it on the way out: a unary
/// call's response and the trailers of its END frame.
///
/// The call is answered only after the outermost interceptor returned this, so an interceptor can add
/// trailers, or fail the call by throwing instead, and the caller receives exactly that.
public struct ServerResponse: Sendable {
    /// A unary call's encoded response message; nil for a streaming call, whose messages left while
    /// its handler ran.
    public let message: ByteBuffer?
    /// Sent with the call's OK status. (A failed call's trailers are its `RPCError.metadata`.)
    public var trailers: Metadata

    init(message: ByteBuffer?, trailers: Metadata = [:]) {
        self.message = message
        self.trailers = trailers
    }

    /// The encoded size of a unary response; 0 for a stream.
    public var messageBytes: Int { message?.readableBytes ?? 0 }
}
