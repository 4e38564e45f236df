/// A unary response as bytes, with its trailing metadata.
public struct RPCRawReply: Sendable {
    public var payload: [UInt8]
    public var trailers: Metadata
}
