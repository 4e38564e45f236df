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

    /// Appends `frame` with `payload` as its payload field, without copying the payload into the frame
    /// first: protobuf-c packs the other fields, and the payload follows as field 6 (a message may list
    /// its fields in any order, so this is the same message on the wire).
    mutating func writeFrame(_ frame: YediRPC.Frame, payload: ByteBuffer) throws(ProtoEncodingError) {
        precondition(frame.payload.isEmpty, "the payload goes in one place only")
        let lengthIndex = writerIndex
        writeInteger(UInt32(0))
        var length = try frame.serialize(into: &self)
        if payload.readableBytes > 0 {
            length += writeInteger(UInt8(Self.payloadTag))
            length += writeVarint(UInt64(payload.readableBytes))
            var payload = payload
            length += writeBuffer(&payload)
        }
        setInteger(UInt32(length), at: lengthIndex)
    }

    /// Field 6 (`payload`), wire type 2 (length-delimited).
    private static let payloadTag = 6 << 3 | 2

    @discardableResult
    mutating func writeVarint(_ value: UInt64) -> Int {
        var value = value
        var written = 0
        while value >= 0x80 {
            written += writeInteger(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        return written + writeInteger(UInt8(value))
    }

    /// Bytes `writeVarint` takes for `value`.
    static func varintBytes(_ value: UInt64) -> Int {
        max(1, (64 - value.leadingZeroBitCount + 6) / 7)
    }
}
