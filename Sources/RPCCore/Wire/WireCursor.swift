import NIOCore
import ProtoBridge

/// Writes protobuf's tags, varints and bytes into memory reserved for them
/// (`ByteBuffer.write(reserving:)`), with no check per byte: the hand-written frames'
/// envelopes (`RequestFrame`, `ReplyFrame`), where `writeInteger` per byte checked the buffer's capacity
/// and uniqueness each time. The caller reserves enough (`RequestHeader.frameBytes`, `metadataBytes`,
/// `varintFieldBytes`), which the tests check at every varint's longest; a debug build traps past it.
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
        let hasNUL =
            utf8.withContiguousStorageIfAvailable { containsZero(UnsafeRawBufferPointer($0)) } ?? utf8.contains(0)
        guard !hasNUL else {
            throw ProtoEncodingError(messageType: "yedi.rpc.Frame", fieldPath: path, reason: .stringContainsNUL)
        }
    }

    /// Eight bytes at a time: a client's token (hundreds of bytes) is checked on every call, and a byte
    /// loop that may stop early is not vectorized. A word has a zero byte exactly when
    /// `(w - 0x01…01) & ~w & 0x80…80` is not zero.
    static func containsZero(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            if (word &- ones) & ~word & highs != 0 { return true }
            offset += 8
        }
        while offset < bytes.count {
            if bytes[offset] == 0 { return true }
            offset += 1
        }
        return false
    }

    static func checkNoNUL(_ metadata: Metadata) throws(ProtoEncodingError) {
        for entry in metadata {
            try checkNoNUL(entry.key, path: "metadata.key")
            try checkNoNUL(entry.value, path: "metadata.value")
        }
    }

    mutating func uint32(_ value: UInt32) {
        memory.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self)
        offset += 4
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
        guard source.count > 0 else { return }
        // Through a slice, so a debug build checks it against the reservation as the subscript does.
        UnsafeMutableRawBufferPointer(rebasing: memory[offset..<offset + source.count]).copyMemory(from: source)
        offset += source.count
    }

    /// Bytes `varintField` writes for `value`.
    static func varintFieldBytes(_ value: UInt64) -> Int {
        value == 0 ? 0 : 1 + ByteBuffer.varintBytes(value)
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

    /// Field 4 entries, one per pair in order; those equal to `previous`'s at the same place (which the
    /// server remembers: `RememberedRequestMetadata`) as `same_as_previous`. Values are compared in
    /// constant time, as the previous one may be another caller's token.
    mutating func metadata(_ metadata: Metadata, repeating previous: Metadata) {
        for (index, entry) in metadata.entries.enumerated() {
            // Keys by their bytes too (`==` would match another encoding of the same characters, whose
            // bytes the server does not count as this key's).
            if index < previous.entries.count, SameBytes.equal(previous.entries[index].key, entry.key),
                SameBytes.equal(previous.entries[index].value, entry.value)
            {
                byte(4 << 3 | 2)
                byte(2)
                byte(3 << 3 | 0)
                byte(1)
            } else {
                self.entry(entry)
            }
        }
    }

    /// Field 4 entries, one per pair in order.
    mutating func metadata(_ metadata: Metadata) {
        for entry in metadata { self.entry(entry) }
    }

    private mutating func entry(_ entry: Metadata.Entry) {
        let entryBytes = Self.stringFieldBytes(entry.key.utf8.count) + Self.stringFieldBytes(entry.value.utf8.count)
        byte(4 << 3 | 2)
        varint(UInt64(entryBytes))
        stringField(1, entry.key)
        stringField(2, entry.value)
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

extension ByteBuffer {
    /// Appends what `write` writes through a cursor over `reserved` bytes of writable memory: exactly
    /// those, so that writing past the reservation traps in a debug build (the buffer's capacity, rounded
    /// up, would hide it).
    mutating func write(reserving reserved: Int, _ write: (inout WireCursor) -> Void) {
        writeWithUnsafeMutableBytes(minimumWritableBytes: reserved) { memory in
            var out = WireCursor(UnsafeMutableRawBufferPointer(rebasing: memory[..<reserved]))
            write(&out)
            return out.offset
        }
    }
}
