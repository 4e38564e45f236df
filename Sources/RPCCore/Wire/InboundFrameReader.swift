import NIOCore

/// Reads one connection's frames (`InboundFrame.read`) in its handler, as `FrameDecoder` passes their
/// bytes on. It remembers the method the previous request named: a connection's requests name the same
/// few methods, and a frame naming it again shares that string instead of allocating one.
struct InboundFrameReader {
    /// Request metadata entries kept per frame; more are counted only.
    let maxMetadataEntries: Int
    private var lastMethod = ""

    init(maxMetadataEntries: Int = .max) {
        self.maxMetadataEntries = maxMetadataEntries
    }

    /// A frame that does not parse is an error: the connection cannot be trusted after it.
    mutating func read(_ body: ByteBuffer) throws(WireError) -> InboundFrame {
        let frame = try InboundFrame.read(body, maxMetadataEntries: maxMetadataEntries, previousMethod: lastMethod)
        if !frame.method.isEmpty { lastMethod = frame.method }
        return frame
    }
}
