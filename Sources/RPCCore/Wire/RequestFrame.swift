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
        self.frameBytes = 4 + 30 + 12 + method.utf8.count + metadata.byteCount + 18 * metadata.count
    }
}

extension ByteBuffer {
    /// Appends a REQUEST frame, length prefix first: its fields in field order, as protobuf-c writes them
    /// (proto3 leaves zeros and empty strings out). Hand-written because every call pays for it: through
    /// the generated `YediRPC.Frame`, a request's metadata became an array of entries, C strings in an
    /// arena and a packed copy. `RequestFrameTests` checks it against that path.
    ///
    /// A method or metadata string with a NUL is refused, as protobuf-c's C strings would cut it short;
    /// the buffer then holds part of a frame and must be dropped.
    mutating func writeRequestFrame(
        _ header: RequestHeader, callID: UInt64, timeoutMicros: UInt64, payload: ByteBuffer
    ) throws(ProtoEncodingError) {
        let lengthIndex = writerIndex
        writeInteger(UInt32(0))
        writeVarintField(1, callID)
        writeVarintField(2, UInt64(YediRPC.FrameKind.request.rawValue))
        try writeStringField(3, header.method, path: "method")
        try writeMetadata(header.metadata)
        writeVarintField(5, timeoutMicros)
        if payload.readableBytes > 0 {
            writeInteger(UInt8(6 << 3 | 2))
            writeVarint(UInt64(payload.readableBytes))
            var payload = payload
            writeBuffer(&payload)
        }
        writeVarintField(8, UInt64(header.windowBytes))
        setInteger(UInt32(writerIndex - lengthIndex - 4), at: lengthIndex)
    }

    /// Appends `metadata` as a frame's field 4 (`repeated MetadataEntry`), one entry per pair in order: a
    /// request's metadata, or an END's trailers.
    mutating func writeMetadata(_ metadata: Metadata) throws(ProtoEncodingError) {
        for entry in metadata {
            let keyBytes = entry.key.utf8.count
            let valueBytes = entry.value.utf8.count
            let entryBytes = Self.stringFieldBytes(keyBytes) + Self.stringFieldBytes(valueBytes)
            writeInteger(UInt8(4 << 3 | 2))
            writeVarint(UInt64(entryBytes))
            try writeStringField(1, entry.key, path: "metadata.key")
            try writeStringField(2, entry.value, path: "metadata.value")
        }
    }

    /// A varint field, left out when 0 (proto3).
    private mutating func writeVarintField(_ number: UInt8, _ value: UInt64) {
        guard value != 0 else { return }
        writeInteger(number << 3)
        writeVarint(value)
    }

    /// A string field, left out when empty (proto3); one with a NUL is refused.
    private mutating func writeStringField(_ number: UInt8, _ value: String, path: String) throws(ProtoEncodingError) {
        let utf8 = value.utf8
        guard !utf8.isEmpty else { return }
        let hasNUL = utf8.withContiguousStorageIfAvailable { $0.contains(0) } ?? utf8.contains(0)
        guard !hasNUL else {
            throw ProtoEncodingError(messageType: "yedi.rpc.Frame", fieldPath: path, reason: .stringContainsNUL)
        }
        writeInteger(number << 3 | 2)
        writeVarint(UInt64(utf8.count))
        writeString(value)
    }

    /// Bytes a string field of `count` bytes takes with its tag and length; none when empty.
    private static func stringFieldBytes(_ count: Int) -> Int {
        count > 0 ? 1 + varintBytes(UInt64(count)) + count : 0
    }
}
