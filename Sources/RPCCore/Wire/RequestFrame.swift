import NIOCore
import ProtoBridge

/// What a client call's REQUEST frames carry besides the call id, the deadline and the payload: made once
/// per call (its attempts send the same) and written by hand on every send (`writeRequestFrame`).
struct RequestHeader: Sendable {
    let method: String
    let metadata: Metadata
    /// A streaming call's initial flow-control window (0: the server's default).
    var windowBytes: UInt32 = 0
    /// Room the frame takes besides its payload, at most: so the buffer is allocated once.
    let frameBytes: Int

    init(method: String, metadata: Metadata) {
        self.method = method
        self.metadata = metadata
        // The length prefix; the tags and varints of the call id, kind, timeout and window (11 + 2 + 11 + 6);
        // the method's and the payload's tags and lengths (6 + 6); per entry, three tags and lengths (18).
        self.frameBytes = 4 + 30 + 12 + method.utf8.count + WireCursor.metadataBytes(metadata)
    }
}

extension ByteBuffer {
    /// Appends a REQUEST frame, length prefix first: its fields in field order, as protobuf-c writes them
    /// (proto3 leaves zeros and empty strings out). Hand-written because every call pays for it: through
    /// the generated `YediRPC.Frame`, a request's metadata became an array of entries, C strings in an
    /// arena and a packed copy. The strings are checked first, then the frame is written in one pass
    /// into memory reserved for it (`WireCursor`): `writeInteger` per tag byte checked the buffer's
    /// capacity and uniqueness each time. `RequestFrameTests` checks it against the generated encoder.
    ///
    /// A method or metadata string with a NUL is refused, as protobuf-c's C strings would cut it short;
    /// nothing is written then. Entries equal to `previous`'s at the same place (the connection's
    /// previous REQUEST, which the server remembers) are written as `same_as_previous`.
    mutating func writeRequestFrame(
        _ header: RequestHeader, callID: UInt64, timeoutMicros: UInt64, payload: ByteBuffer,
        repeating previous: Metadata? = nil
    ) throws(ProtoEncodingError) {
        try WireCursor.checkNoNUL(header.method, path: "method")
        try WireCursor.checkNoNUL(header.metadata)
        let payloadBytes = payload.readableBytes
        write(reserving: header.frameBytes + payloadBytes) { out in
            out.uint32(0)  // the length prefix, filled in last
            out.varintField(1, callID)
            out.varintField(2, UInt64(YediRPC.FrameKind.request.rawValue))
            out.stringField(3, header.method)
            if let previous {
                out.metadata(header.metadata, repeating: previous)
            } else {
                out.metadata(header.metadata)
            }
            out.varintField(5, timeoutMicros)
            if payloadBytes > 0 {
                out.byte(6 << 3 | 2)
                out.varint(UInt64(payloadBytes))
                payload.withUnsafeReadableBytes { out.bytes($0) }
            }
            out.varintField(8, UInt64(header.windowBytes))
            out.lengthPrefix()
        }
    }

    /// Appends `metadata` as a frame's field 4 (`repeated MetadataEntry`), one entry per pair in order: an
    /// END's trailers. A key or value with a NUL is refused, and nothing is written.
    mutating func writeMetadata(_ metadata: Metadata) throws(ProtoEncodingError) {
        try WireCursor.checkNoNUL(metadata)
        write(reserving: WireCursor.metadataBytes(metadata)) { out in out.metadata(metadata) }
    }
}
