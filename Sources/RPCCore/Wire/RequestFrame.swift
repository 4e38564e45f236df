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
    /// nothing is written then.
    mutating func writeRequestFrame(
        _ header: RequestHeader, callID: UInt64, timeoutMicros: UInt64, payload: ByteBuffer
    ) throws(ProtoEncodingError) {
        try WireCursor.checkNoNUL(header.method, path: "method")
        try WireCursor.checkNoNUL(header.metadata)
        let payloadBytes = payload.readableBytes
        writeWithUnsafeMutableBytes(minimumWritableBytes: header.frameBytes + payloadBytes) { memory in
            var out = WireCursor(memory)
            out.skip(4)  // the length prefix, filled in last
            out.varintField(1, callID)
            out.varintField(2, UInt64(YediRPC.FrameKind.request.rawValue))
            out.stringField(3, header.method)
            out.metadata(header.metadata)
            out.varintField(5, timeoutMicros)
            if payloadBytes > 0 {
                out.byte(6 << 3 | 2)
                out.varint(UInt64(payloadBytes))
                payload.withUnsafeReadableBytes { out.bytes($0) }
            }
            out.varintField(8, UInt64(header.windowBytes))
            out.lengthPrefix()
            return out.offset
        }
    }

    /// Appends `metadata` as a frame's field 4 (`repeated MetadataEntry`), one entry per pair in order: an
    /// END's trailers. A key or value with a NUL is refused, and nothing is written.
    mutating func writeMetadata(_ metadata: Metadata) throws(ProtoEncodingError) {
        try WireCursor.checkNoNUL(metadata)
        writeWithUnsafeMutableBytes(minimumWritableBytes: WireCursor.metadataBytes(metadata)) { memory in
            var out = WireCursor(memory)
            out.metadata(metadata)
            return out.offset
        }
    }
}

/// Writes protobuf's tags, varints and bytes into memory reserved for them, with no check per byte:
/// the caller reserved enough (`RequestHeader.frameBytes`, `metadataBytes`), which the tests check at
/// every varint's longest.
struct WireCursor {
    private let memory: UnsafeMutableRawBufferPointer
    private(set) var offset = 0

    init(_ memory: UnsafeMutableRawBufferPointer) {
        self.memory = memory
    }

    /// Room `metadata` takes as field 4 entries, at most.
    static func metadataBytes(_ metadata: Metadata) -> Int {
        metadata.byteCount + 18 * metadata.count
    }

    static func checkNoNUL(_ value: String, path: String) throws(ProtoEncodingError) {
        let utf8 = value.utf8
        let hasNUL = utf8.withContiguousStorageIfAvailable { $0.contains(0) } ?? utf8.contains(0)
        guard !hasNUL else {
            throw ProtoEncodingError(messageType: "yedi.rpc.Frame", fieldPath: path, reason: .stringContainsNUL)
        }
    }

    static func checkNoNUL(_ metadata: Metadata) throws(ProtoEncodingError) {
        for entry in metadata {
            try checkNoNUL(entry.key, path: "metadata.key")
            try checkNoNUL(entry.value, path: "metadata.value")
        }
    }

    mutating func skip(_ count: Int) {
        offset += count
    }

    mutating func byte(_ value: UInt8) {
        memory[offset] = value
        offset += 1
    }

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            byte(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        byte(UInt8(value))
    }

    mutating func bytes(_ source: UnsafeRawBufferPointer) {
        guard let base = source.baseAddress, source.count > 0 else { return }
        memory.baseAddress!.advanced(by: offset).copyMemory(from: base, byteCount: source.count)
        offset += source.count
    }

    /// A varint field, left out when 0 (proto3).
    mutating func varintField(_ number: UInt8, _ value: UInt64) {
        guard value != 0 else { return }
        byte(number << 3)
        varint(value)
    }

    /// A string field, left out when empty (proto3); checked for NUL beforehand (`checkNoNUL`).
    mutating func stringField(_ number: UInt8, _ value: String) {
        let utf8 = value.utf8
        guard !utf8.isEmpty else { return }
        byte(number << 3 | 2)
        varint(UInt64(utf8.count))
        let copied: Void? = utf8.withContiguousStorageIfAvailable { bytes(UnsafeRawBufferPointer($0)) }
        if copied == nil {
            for character in utf8 { byte(character) }
        }
    }

    /// Field 4 entries, one per pair in order.
    mutating func metadata(_ metadata: Metadata) {
        for entry in metadata {
            let entryBytes = Self.stringFieldBytes(entry.key.utf8.count) + Self.stringFieldBytes(entry.value.utf8.count)
            byte(4 << 3 | 2)
            varint(UInt64(entryBytes))
            stringField(1, entry.key)
            stringField(2, entry.value)
        }
    }

    /// The frame's 4-byte big-endian length prefix, for everything written after it.
    func lengthPrefix() {
        memory.storeBytes(of: UInt32(offset - 4).bigEndian, toByteOffset: 0, as: UInt32.self)
    }

    /// Bytes a string field of `count` bytes takes with its tag and length; none when empty.
    private static func stringFieldBytes(_ count: Int) -> Int {
        count > 0 ? 1 + ByteBuffer.varintBytes(UInt64(count)) + count : 0
    }
}
