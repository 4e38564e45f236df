import Logging
import RPCTLS

/// How an `RPCClient` reaches a service and behaves when things go wrong.
public struct ClientConfiguration: Sendable {
    /// One address of the service.
    public struct Target: Sendable, Hashable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// `host:port`, `[v6]:port`; nil when malformed.
        public init?(_ text: String) {
            let host: Substring
            let port: Substring
            if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
                host = text[text.index(after: text.startIndex)..<close]
                let rest = text[text.index(after: close)...]
                guard rest.hasPrefix(":") else { return nil }
                port = rest.dropFirst()
            } else {
                guard let colon = text.lastIndex(of: ":") else { return nil }
                host = text[..<colon]
                port = text[text.index(after: colon)...]
            }
            guard !host.isEmpty, let number = Int(port), (1...65535).contains(number) else { return nil }
            self.init(host: String(host), port: number)
        }

        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// The service's addresses; calls are spread over them round robin.
    public var targets: [Target]
    /// Client TLS: trust roots, and a client certificate for mutual TLS.
    public var tls: TLSConfiguration
    /// The name the server certificate must carry; nil checks each target's host (name or IP).
    public var serverName: String?
    /// A URI SAN the server's certificate must carry, e.g. `spiffe://yedi/service/booking`: a peer client
    /// sets it so that another service's certificate (from the same CA) cannot answer in its place.
    public var expectedServerIdentity: String?
    /// Connections opened to each target.
    public var connectionsPerTarget: Int
    /// Timeout of calls whose options give none; nil means none.
    public var defaultTimeout: Duration?
    /// Bounds the TCP connection; then, again, the TLS handshake and the server's SETTINGS, so a server
    /// that accepts and never answers fails the attempt instead of holding calls.
    public var connectTimeout: Duration
    /// Delays between reconnection attempts.
    public var reconnectBackoff: Backoff
    /// Delays between attempts refused at once (nothing listens on the port: the process is down or
    /// restarting). A refusal costs the server's host nothing, and a restarted replica is found within a
    /// second instead of after `reconnectBackoff`'s longer waits.
    public var refusedReconnectBackoff: Backoff
    /// Ping when nothing arrived for this long; zero disables keepalive.
    public var keepaliveInterval: Duration
    /// Without a PONG this long after a PING, the connection is considered dead.
    public var keepaliveTimeout: Duration
    /// Attempts of an idempotent call failing with `UNAVAILABLE`, the first included.
    public var maxAttempts: Int
    /// Delays between those attempts.
    public var retryBackoff: Backoff
    /// Shared by all calls of the client; stops retrying when many calls fail.
    public var retryThrottle: RetryThrottle
    /// How long a target that answered `UNAVAILABLE` `ejectionThreshold` times in a row is left out of the
    /// rotation, growing with each further failure (`TargetEjection`); with several targets, calls go to
    /// the others meanwhile.
    public var ejectionBackoff: Backoff
    /// `UNAVAILABLE` answers in a row from one target before its first ejection (unary calls only; the
    /// client's own deadline or cancellation counts neither way).
    public var ejectionThreshold: Int
    /// With several targets, each connection watches its server's health (`Health/Watch` for the whole
    /// server, on the connection itself) and takes no new calls while the server says NOT_SERVING and
    /// another is ready, so an idle client learns of a replica's trouble before a call does. With one
    /// target there is nothing to choose, and no watch is made. The watch takes one of the connection's
    /// call slots (256 by default).
    public var watchesHealth = true
    /// The pause before a failed watch is made again on a connection that stays up (tests shorten it).
    var healthWatchRetryDelay: Duration = .seconds(5)
    /// Limits this client keeps to until the server's SETTINGS arrive. Then the lower concurrency wins,
    /// requests may be as large as the server announced (it is the one that refuses them), and replies
    /// as large as the server announced, up to `maxConnectionBytes`.
    public var limits: WireLimits
    /// Default flow-control window of server-streaming calls.
    public var streamWindowBytes: Int
    /// Outermost first.
    public var interceptors: [any ClientInterceptor]
    public var logger: Logger

    public init(
        targets: [Target],
        tls: TLSConfiguration,
        serverName: String? = nil,
        connectionsPerTarget: Int = 1,
        defaultTimeout: Duration? = nil,
        connectTimeout: Duration = .seconds(10),
        reconnectBackoff: Backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(10)),
        refusedReconnectBackoff: Backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(1)),
        keepaliveInterval: Duration = .seconds(30),
        keepaliveTimeout: Duration = .seconds(10),
        maxAttempts: Int = 3,
        retryBackoff: Backoff = Backoff(initial: .milliseconds(50), multiplier: 2, maximum: .seconds(1)),
        retryThrottle: RetryThrottle = RetryThrottle(),
        ejectionBackoff: Backoff = Backoff(initial: .seconds(1), multiplier: 2, maximum: .seconds(30)),
        ejectionThreshold: Int = 3,
        limits: WireLimits = .default,
        streamWindowBytes: Int = 256 << 10,
        interceptors: [any ClientInterceptor] = [],
        expectedServerIdentity: String? = nil,
        logger: Logger = Logger(label: "yedi.rpc.client")
    ) {
        self.expectedServerIdentity = expectedServerIdentity
        precondition(!targets.isEmpty, "a client needs at least one target")
        precondition(connectionsPerTarget >= 1, "a client needs at least one connection per target")
        self.targets = targets
        self.tls = tls
        self.serverName = serverName
        self.connectionsPerTarget = connectionsPerTarget
        self.defaultTimeout = defaultTimeout
        self.connectTimeout = connectTimeout
        self.reconnectBackoff = reconnectBackoff
        self.refusedReconnectBackoff = refusedReconnectBackoff
        self.keepaliveInterval = keepaliveInterval
        self.keepaliveTimeout = keepaliveTimeout
        self.maxAttempts = max(1, maxAttempts)
        self.retryBackoff = retryBackoff
        self.retryThrottle = retryThrottle
        self.ejectionBackoff = ejectionBackoff
        self.ejectionThreshold = ejectionThreshold
        self.limits = limits
        self.streamWindowBytes = streamWindowBytes
        self.interceptors = interceptors
        self.logger = logger
    }
}
