/// Where a `HTTPServer` listens and how much a client can make it hold.
public struct HTTPServerConfiguration: Sendable {
    /// The address to bind.
    public var host: String
    /// The port to bind; 0 lets the system pick one, read back from `HTTPServer.listeningAddress`.
    public var port: Int
    /// Requests carry nothing these servers read, so a larger body is refused (413) and the connection
    /// closed, rather than read at the sender's pace.
    public var maxRequestBodyBytes: Int
    /// Connections open at once; one more is closed as soon as it is accepted. With one response in the
    /// making per connection and writes held back past `writeBufferBytes`, this bounds the memory clients
    /// can make the server hold.
    public var maxConnections: Int
    /// Bytes queued for a connection's socket above which the next response waits until the client has
    /// read: a client that pipelines requests and never reads gets one response beyond this, not all.
    public var writeBufferBytes: Int
    /// A connection that sends nothing for this long is closed (also a client dribbling its headers).
    public var idleTimeout: Duration

    public init(
        host: String,
        port: Int,
        maxRequestBodyBytes: Int = 64 * 1024,
        maxConnections: Int = 1_024,
        writeBufferBytes: Int = 256 << 10,
        idleTimeout: Duration = .seconds(60)
    ) {
        self.host = host
        self.port = port
        self.maxRequestBodyBytes = maxRequestBodyBytes
        self.maxConnections = maxConnections
        self.writeBufferBytes = writeBufferBytes
        self.idleTimeout = idleTimeout
    }
}
