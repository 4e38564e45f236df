import NIOCore

/// Reads one connection's frames (`InboundFrame.read`) in its handler, as `FrameDecoder` passes their
/// bytes on. It remembers the method and the metadata the previous request carried: a connection's
/// requests name the same few methods and carry the same `authorization`, and a frame repeating one
/// shares that string instead of checking and allocating its own (a token is some 300 bytes).
struct InboundFrameReader {
    /// The most metadata (as the limits count it) kept from one frame for the next to share: enough for
    /// a token and a few headers, so an idle connection holds little.
    static let maxRememberedMetadataBytes = 4096

    /// Request metadata entries kept per frame; more are counted only.
    let maxMetadataEntries: Int
    private var lastMethod = ""
    private var lastMetadata = Metadata()

    init(maxMetadataEntries: Int = .max) {
        self.maxMetadataEntries = maxMetadataEntries
    }

    /// A frame that does not parse is an error: the connection cannot be trusted after it.
    mutating func read(_ body: ByteBuffer) throws(WireError) -> InboundFrame {
        let frame = try InboundFrame.read(
            body, maxMetadataEntries: maxMetadataEntries, previousMethod: lastMethod, previousMetadata: lastMetadata)
        if !frame.method.isEmpty { lastMethod = frame.method }
        if frame.kind == .request {
            lastMetadata = frame.metadataSize.bytes <= Self.maxRememberedMetadataBytes ? frame.metadata : Metadata()
        }
        return frame
    }
}
