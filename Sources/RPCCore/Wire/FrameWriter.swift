import NIOCore
import ProtoBridge

extension ByteBuffer {
    /// Appends `frame` with its 4-byte big-endian length prefix.
    mutating func writeFrame(_ frame: YediRPC.Frame) throws(ProtoEncodingError) {
        let lengthIndex = writerIndex
        writeInteger(UInt32(0))
        let length = try frame.serialize(into: &self)
        setInteger(UInt32(length), at: lengthIndex)
    }
}

extension YediRPC.Frame {
    static func status(_ code: StatusCode, _ message: String) -> YediRPC.Status {
        YediRPC.Status(code: UInt32(code.rawValue), message: message)
    }
}
