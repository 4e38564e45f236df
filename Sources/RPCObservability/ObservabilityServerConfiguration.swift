extension ObservabilityServer {
    /// Where the server listens and how much it accepts.
    public struct Configuration: Sendable, Hashable {
        /// The address to bind, e.g. `127.0.0.1`, or `0.0.0.0` for Prometheus on another host to reach it.
        public var host: String
        /// The port to bind; 0 lets the system pick one, read back from ``ObservabilityServer/listeningAddress``.
        public var port: Int
        /// Requests carry nothing this server reads, so a body larger than this is refused (413) and the
        /// connection closed, rather than read at the sender's pace.
        public var maxRequestBodyBytes: Int

        public init(host: String, port: Int, maxRequestBodyBytes: Int = 64 * 1024) {
            self.host = host
            self.port = port
            self.maxRequestBodyBytes = maxRequestBodyBytes
        }
    }
}
