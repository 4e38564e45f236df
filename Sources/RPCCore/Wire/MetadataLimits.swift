import ProtoBridge

extension WireLimits {
    /// Bytes each metadata entry counts besides its key and value, as HTTP/2 counts a header field
    /// (RFC 7541, 4.1): an empty entry still costs the server an object, so it cannot be free.
    public static let metadataEntryOverhead = 32

    /// Refuses request metadata over the limits, by count first, then by size: checked on the entries
    /// as decoded, before the server builds anything of its own from them. `notKept`: entries the frame
    /// reader counted but did not keep.
    func checkRequestMetadata(_ entries: [YediRPC.MetadataEntry], notKept: Int = 0) throws(RPCError) {
        let count = entries.count + notKept
        guard count <= maxMetadataEntries else {
            throw RPCError(
                code: .resourceExhausted,
                message: "request metadata has \(count) entries, more than \(maxMetadataEntries)"
            )
        }
        var bytes = 0
        for entry in entries {
            bytes += Self.metadataEntryOverhead + entry.key.utf8.count + entry.value.utf8.count
            guard bytes <= maxMetadataBytes else {
                throw RPCError(
                    code: .resourceExhausted,
                    message: "request metadata exceeds \(maxMetadataBytes) bytes"
                        + " (each entry counts \(Self.metadataEntryOverhead) bytes besides its key and value)"
                )
            }
        }
    }
}
