/// Per-call settings a client passes with a request.
public struct CallOptions: Sendable {
    /// How long the caller waits; the server learns it too and stops working when it passes.
    /// `nil` uses the client's default timeout. A deadline inherited from an incoming call (the caller
    /// is itself a handler) is honoured when it is sooner.
    public var timeout: Duration?
    /// Request metadata; `authorization` carries the caller's token.
    public var metadata: Metadata
    /// Retry on `UNAVAILABLE`: `nil` lets the method's idempotency decide, `false` never retries.
    public var retry: Bool?
    /// Server streaming: bytes the server may send ahead of what this caller has consumed.
    public var streamWindowBytes: Int?

    public init(timeout: Duration? = nil, metadata: Metadata = [:], retry: Bool? = nil, streamWindowBytes: Int? = nil) {
        self.timeout = timeout
        self.metadata = metadata
        self.retry = retry
        self.streamWindowBytes = streamWindowBytes
    }

    public static var defaults: CallOptions { CallOptions() }
}
