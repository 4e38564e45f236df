import NIOCore

/// Reads one connection's frames (`InboundFrame.read`) in its handler, as `FrameDecoder` passes their
/// bytes on. It remembers the method and the metadata the previous request carried: a connection's
/// requests name the same few methods and carry the same `authorization`, and a frame repeating one
/// shares that string instead of checking and allocating its own (a token is some 300 bytes). A client
/// told of this memory (SETTINGS' `remembered_metadata_bytes`) sends such an entry as
/// `same_as_previous`, four bytes instead of the token.
struct InboundFrameReader {
    /// The most metadata (as the limits count it) kept from one frame for the next to share: enough for
    /// a token and a few headers, so an idle connection holds little.
    static let maxRememberedMetadataBytes = 4096

    /// Request metadata entries kept per frame; more are counted only.
    let maxMetadataEntries: Int
    /// A request's metadata is remembered when it counts at most this many bytes (what a server's
    /// SETTINGS announce, so that its clients know which requests they may repeat entries of).
    let rememberedMetadataBytes: Int
    private var lastMethod = ""
    private var lastMetadata = Metadata()

    init(maxMetadataEntries: Int = .max, rememberedMetadataBytes: Int = maxRememberedMetadataBytes) {
        self.maxMetadataEntries = maxMetadataEntries
        self.rememberedMetadataBytes = rememberedMetadataBytes
    }

    /// What a server remembers under `limits`: at most `maxRememberedMetadataBytes`, and no more than
    /// its metadata limits let through. Each entry counts at least `metadataEntryOverhead` bytes, so a
    /// request this small has no entry past `maxMetadataEntries`: all of it was kept, and a client that
    /// counts the same way knows what was remembered.
    static func rememberedMetadataBytes(under limits: WireLimits) -> Int {
        let overhead = WireLimits.metadataEntryOverhead
        return min(
            maxRememberedMetadataBytes, limits.maxMetadataBytes,
            min(limits.maxMetadataEntries, maxRememberedMetadataBytes / overhead) * overhead)
    }

    /// A frame that does not parse is an error: the connection cannot be trusted after it.
    mutating func read(_ body: ByteBuffer) throws(WireError) -> InboundFrame {
        let frame = try InboundFrame.read(
            body, maxMetadataEntries: maxMetadataEntries, previousMethod: lastMethod, previousMetadata: lastMetadata)
        // A repeat shares the remembered string, so the common case is a comparison of two pointers and
        // no reference to count.
        if !frame.method.isEmpty && frame.method != lastMethod { lastMethod = frame.method }
        if frame.kind == .request {
            lastMetadata = frame.metadataSize.bytes <= rememberedMetadataBytes ? frame.metadata : Metadata()
        }
        return frame
    }
}
