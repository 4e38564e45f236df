/// How large a request's metadata is, as the limits count it: counted by the frame reader as it reads
/// the entries, so the limit check and the memory budget need not walk them again.
struct MetadataSize: Equatable {
    /// Every entry the frame carried, kept or not (`InboundFrame.metadataEntriesNotKept`).
    var entries = 0
    /// Keys and values as sent, plus `WireLimits.metadataEntryOverhead` per entry.
    var bytes = 0

    mutating func add(keyBytes: Int, valueBytes: Int) {
        entries += 1
        bytes += WireLimits.metadataEntryOverhead + keyBytes + valueBytes
    }
}

extension WireLimits {
    /// Bytes each metadata entry counts besides its key and value, as HTTP/2 counts a header field
    /// (RFC 7541, 4.1): an empty entry still costs the server an object, so it cannot be free.
    public static let metadataEntryOverhead = 32

    /// Refuses request metadata over the limits, by count first, then by size: checked on the sizes the
    /// frame reader counted, before the server builds anything of its own from them.
    func checkRequestMetadata(_ size: MetadataSize) throws(RPCError) {
        guard size.entries <= maxMetadataEntries else {
            throw RPCError(
                code: .resourceExhausted,
                message: "request metadata has \(size.entries) entries, more than \(maxMetadataEntries)"
            )
        }
        guard size.bytes <= maxMetadataBytes else {
            throw RPCError(
                code: .resourceExhausted,
                message: "request metadata exceeds \(maxMetadataBytes) bytes"
                    + " (each entry counts \(Self.metadataEntryOverhead) bytes besides its key and value)"
            )
        }
    }
}
