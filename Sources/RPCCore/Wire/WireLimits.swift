/// Bounds on what one peer may make the other hold in memory.
public struct WireLimits: Sendable, Hashable {
    /// The largest frame (the N of the 4-byte length prefix) accepted; as gRPC's default receive limit.
    public var maxFrameBytes: Int
    /// Calls a server runs at once on one connection; more are refused with `RESOURCE_EXHAUSTED`.
    public var maxConcurrentCalls: Int
    /// Bytes of one request's metadata: keys and values, plus `metadataEntryOverhead` per entry.
    public var maxMetadataBytes: Int
    /// Entries of one request's metadata; a real caller sends a handful (authorization, traceparent, …).
    public var maxMetadataEntries: Int
    /// Bytes one connection may hold for its calls: the requests (payload, metadata, method) of calls
    /// whose handlers run, plus replies produced and not yet written to the socket, plus a unary call's
    /// share for its reply (the largest its method produced). A call that does not fit is refused
    /// with `RESOURCE_EXHAUSTED`, one whose reply's share does not fit waits to start, and a reply that
    /// does not fit waits to be written (and while the socket is full, the connection reads nothing).
    /// With one frame being received (at most `maxFrameBytes`), this bounds what a peer can make a
    /// connection hold. The default leaves room for 16 calls at the 4 MiB frame limit.
    public var maxConnectionBytes: Int

    public init(
        maxFrameBytes: Int = 4 << 20,
        maxConcurrentCalls: Int = 256,
        maxMetadataBytes: Int = 16 << 10,
        maxMetadataEntries: Int = 64,
        maxConnectionBytes: Int = 64 << 20
    ) {
        self.maxFrameBytes = maxFrameBytes
        self.maxConcurrentCalls = maxConcurrentCalls
        self.maxMetadataBytes = maxMetadataBytes
        self.maxMetadataEntries = maxMetadataEntries
        self.maxConnectionBytes = maxConnectionBytes
    }

    public static let `default` = WireLimits()

    /// Bytes of a PING's payload a PONG echoes: a keepalive needs 8, and echoing a peer's input without
    /// bound would let it make us send whatever it sends.
    static let maxPongPayloadBytes = 64

    /// Bytes a frame envelope adds around its payload (call id, kind, status, …) beyond the metadata
    /// and the method name; a payload must leave this much room under `maxFrameBytes`.
    static let envelopeOverhead = 64
}
