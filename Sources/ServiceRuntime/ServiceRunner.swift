import Foundation
import Logging
import NIOCore
import NIOPosix
import RPCCore
import ServiceLifecycle

/// Runs one Yedi service process: TLS RPC server with the standard interceptors, /metrics and /healthz,
/// graceful shutdown on SIGTERM/SIGINT.
///
/// Every service's `main` is this plus its own handlers, so the four processes behave alike.
public struct ServiceRunner {
    /// The service's short name (`account`): names its certificate, its data folder and its logs.
    public let name: String
    public let options: ServiceOptions

    public init(name: String, options: ServiceOptions) {
        self.name = name
        self.options = options
    }

    /// - Parameters:
    ///   - services: Implemented services.
    ///   - placeholders: Services whose handlers do not exist yet (their methods answer UNIMPLEMENTED).
    ///   - verifier: Checks access tokens; nil until AccountService issues them.
    public func run(
        services: [any RPCService],
        placeholders: [ServiceDescriptor],
        verifier: (any AccessTokenVerifier)?
    ) async throws {
        let level = options.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "yedi.\(name)")
        logger.logLevel = options.logLevel
        let registry = YediMetrics.bootstrapPrometheus()

        try FileManager.default.createDirectory(atPath: options.dataDirectory, withIntermediateDirectories: true)
        let pki = URL(fileURLWithPath: options.pkiDirectory)
        let tls = TLSConfiguration.server(
            certificateChainFile: pki.appendingPathComponent("\(name).pem").path,
            privateKeyFile: pki.appendingPathComponent("\(name).key").path,
            trustRootsFile: pki.appendingPathComponent("ca.pem").path,
            // Service certificates identify internal callers; end users come with tokens instead.
            clientCertificateVerification: .optional
        )
        let server = try RPCServer(
            configuration: ServerConfiguration(
                host: options.host,
                port: options.port,
                tls: tls,
                shutdownGracePeriod: .milliseconds(Int64(options.shutdownGraceSeconds * 1_000))
            ),
            services: services,
            placeholders: placeholders,
            interceptors: [
                ServerTracingInterceptor(),
                ServerLoggingInterceptor(requestIDs: { UUID().uuidString.lowercased() }),
                ServerMetricsInterceptor(),
                AuthenticationInterceptor(verifier: verifier),
            ],
            logger: logger
        )
        let observability = ObservabilityServer(
            configuration: .init(host: "127.0.0.1", port: options.metricsPort),
            registry: registry,
            logger: logger,
            isServing: { server.health.status(of: "") == .serving }
        )
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: server), .init(service: observability)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        logger.info(
            "starting",
            metadata: ["rpc": "\(options.host):\(options.port)", "metrics": "127.0.0.1:\(options.metricsPort)"]
        )
        try await group.run()
    }
}
