import NIOCore
import RPCTLS

/// Where and how an `RPCServer` listens.
public struct ServerConfiguration: Sendable {
    public var host: String
    /// 0 picks a free port (see `RPCServer.listeningAddress`).
    public var port: Int
    /// Server TLS: certificate chain, key, and (for mutual TLS) the client CA and policy. Required:
    /// every Yedi connection is TLS.
    public var tls: TLSConfiguration
    public var limits: WireLimits
    /// A connection without calls for this long is closed (with GOAWAY); zero keeps it forever.
    public var idleTimeout: Duration
    /// On shutdown, calls in flight get this long to finish before they are cancelled.
    public var shutdownGracePeriod: Duration
    /// Flow-control window of server-streaming calls whose client did not choose one.
    public var defaultStreamWindowBytes: Int
    /// A connection with replies outstanding (counted in `limits.maxConnectionBytes`) on which none is
    /// written, and the socket's queue does not shrink, for this long is closed: its peer stopped
    /// reading, and would otherwise keep those replies and its calls in memory. Zero never closes.
    public var replyStallTimeout: Duration
    /// How the server's logs name users; services give their deployment's keyed hash.
    public var userTag: LogUserTag

    public init(
        host: String = "127.0.0.1",
        port: Int,
        tls: TLSConfiguration,
        limits: WireLimits = .default,
        idleTimeout: Duration = .seconds(300),
        shutdownGracePeriod: Duration = .seconds(10),
        defaultStreamWindowBytes: Int = 256 << 10,
        replyStallTimeout: Duration = .seconds(30),
        userTag: LogUserTag = .perProcess
    ) {
        self.userTag = userTag
        self.host = host
        self.port = port
        self.tls = tls
        self.limits = limits
        self.idleTimeout = idleTimeout
        self.shutdownGracePeriod = shutdownGracePeriod
        self.defaultStreamWindowBytes = defaultStreamWindowBytes
        self.replyStallTimeout = replyStallTimeout
    }
}
