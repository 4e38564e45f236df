/// Bounds on what one peer may make the other hold in memory.
public struct WireLimits: Sendable, Hashable {
    /// The largest frame (the N of the 4-byte length prefix) accepted; as gRPC's default receive limit.
    public var maxFrameBytes: Int
    /// Calls a server runs at once on one connection; more are refused with `RESOURCE_EXHAUSTED`.
    public var maxConcurrentCalls: Int
    /// Bytes of keys and values of one request's metadata.
    public var maxMetadataBytes: Int

    public init(maxFrameBytes: Int = 4 << 20, maxConcurrentCalls: Int = 256, maxMetadataBytes: Int = 16 << 10) {
        self.maxFrameBytes = maxFrameBytes
        self.maxConcurrentCalls = maxConcurrentCalls
        self.maxMetadataBytes = maxMetadataBytes
    }

    public static let `default` = WireLimits()

    /// Bytes a frame envelope adds around its payload (call id, kind, status, …) beyond the metadata
    /// and the method name; a payload must leave this much room under `maxFrameBytes`.
    static let envelopeOverhead = 64
}
