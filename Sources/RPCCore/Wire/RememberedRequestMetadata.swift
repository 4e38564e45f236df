/// A client's copy of what the server remembers of its previous REQUEST on a connection (the server's
/// side is `InboundFrameReader`), so that an entry the next request repeats at the same place goes out
/// as `same_as_previous`, four bytes, instead of its key and value: a signed-in client's token, some
/// 300 bytes, on every call. Both sides count the metadata the way the limits do, so they agree on
/// which requests were remembered; a server that announced nothing is sent every entry in full.
struct RememberedRequestMetadata {
    /// What the server's SETTINGS said it remembers (`remembered_metadata_bytes`); 0 before them.
    var rememberedBytes = 0
    /// The metadata of the previous REQUEST written on the connection, when the server remembers it.
    private(set) var previous: Metadata?

    /// A REQUEST carrying `metadata` was written, after every earlier one (the order the server reads
    /// them in). A request that was refused before it was written changes nothing.
    mutating func requestWritten(_ metadata: Metadata) {
        let bytes = metadata.byteCount + metadata.count * WireLimits.metadataEntryOverhead
        previous = rememberedBytes > 0 && bytes <= rememberedBytes ? metadata : nil
    }
}
