import Logging
import NIOCore
import RPCAccess
import RPCCore
import RPCObservability
import ServiceLifecycle

/// This service's clients to the other services it calls, one `RPCClient` per peer over all of the
/// peer's addresses (replicas), each presenting this service's certificate (mutual TLS).
///
/// A peer client accepts only a server whose certificate carries that peer's identity
/// (`spiffe://yedi/service/<peer>`): any service certificate verifies against the CA, the identity says
/// which service it is. Calls made while serving a call inherit its deadline and trace (RPCCore), and
/// carry the user it was made for (`OnBehalfOfInterceptor`).
public final class ServicePeers: Sendable {
    private let clients: [String: RPCClient]

    init(
        configuration: ServiceConfiguration,
        logger: Logger,
        eventLoopGroup: any EventLoopGroup
    ) throws {
        var clients: [String: RPCClient] = [:]
        for (name, targets) in configuration.peers {
            var peerLogger = logger
            peerLogger[metadataKey: "peer"] = "\(name)"
            let client = try RPCClient(
                configuration: ClientConfiguration(
                    targets: targets,
                    tls: .client(
                        trustRootsFile: configuration.caFile,
                        certificateChainFile: configuration.certificateFile,
                        privateKeyFile: configuration.privateKeyFile
                    ),
                    defaultTimeout: .seconds(10),
                    // Peers are on a private network and restart for deploys and crashes: find a restarted
                    // peer within about a second (one connect attempt a second while it is down costs nothing),
                    // rather than after the 10 s a public client backs off to.
                    reconnectBackoff: Backoff(initial: .milliseconds(50), maximum: .seconds(1)),
                    interceptors: [
                        ClientTracingInterceptor(),
                        ClientMetricsInterceptor(),
                        ClientLoggingInterceptor(logger: peerLogger),
                        OnBehalfOfInterceptor(),
                    ],
                    expectedServerIdentity: PeerInfo.serviceIdentity(of: name),
                    logger: peerLogger
                ),
                eventLoopGroup: eventLoopGroup
            )
            clients[name] = client
        }
        self.clients = clients
    }

    /// No peers at all: a process whose outbox only has in-process destinations (the outbox's tests and
    /// its bench).
    public init() {
        clients = [:]
    }

    /// The client for `peer`; `FAILED_PRECONDITION` when this process was not configured with it.
    public func client(for peer: String) throws(RPCError) -> RPCClient {
        guard let client = clients[peer] else {
            throw RPCError(code: .failedPrecondition, message: "this service has no peer \"\(peer)\" configured")
        }
        return client
    }

    /// Peer names, for logs.
    public var names: [String] { clients.keys.sorted() }

    /// The clients as lifecycle services: their connections live while the process runs.
    var services: [any Service] { clients.keys.sorted().compactMap { clients[$0] } }
}
