import ProtoBridge

/// A connection-level protocol failure: the peer's bytes cannot be trusted, so the connection closes.
public enum WireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A length prefix above the limit; nothing of the frame was read or allocated.
    case frameTooLarge(length: Int, limit: Int)
    /// The frame's bytes are not a `yedi.rpc.Frame`.
    case malformedFrame(ProtoDecodingError)
    /// The connection ended in the middle of a frame.
    case truncatedFrame(bufferedBytes: Int)
    /// A frame the receiver's role never accepts (for example a response sent to a server).
    case unexpectedFrame(String)

    public var description: String {
        switch self {
        case .frameTooLarge(let length, let limit):
            "a frame of \(length) bytes exceeds the limit of \(limit) bytes"
        case .malformedFrame(let error): "malformed frame: \(error)"
        case .truncatedFrame(let bytes): "the connection ended inside a frame (\(bytes) bytes buffered)"
        case .unexpectedFrame(let detail): "unexpected frame: \(detail)"
        }
    }

    /// The status a GOAWAY reports for it.
    var status: YediRPC.Status {
        switch self {
        case .frameTooLarge: YediRPC.Status(.resourceExhausted, description)
        default: YediRPC.Status(.invalidArgument, description)
        }
    }
}
