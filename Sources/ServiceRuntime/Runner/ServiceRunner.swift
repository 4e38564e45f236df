import AccessTokens
import CountLimitedCache
import Foundation
import Logging
import Metrics
import NIOCore
import NIOPosix
import RPCAccess
import RPCCore
import RPCObservability
import ServiceLifecycle

/// Runs a `ServiceDefinition`: as the process's `main` (flags, environment, signals), or in-process for
/// tests and tools (`start`).
///
/// Order of life: startup checks (TLS files, data folder, ports) → metrics bootstrapped → database opened
/// and migrated → environment (peers, tokens, outbox) → the service's handlers → one `ServiceGroup` of peer clients, outbox worker, the service's
/// background workers, the RPC server and `/metrics`. Shutdown runs that group in reverse (the server
/// drains its calls first, workers stop next, peer clients last), and only then is the database closed.
public enum ServiceRunner {
    /// The `main` of a service executable: `await ServiceRunner.main(AccountServiceDefinition.self)`.
    public static func main<Definition: ServiceDefinition>(_ definition: Definition.Type) async {
        await ServiceCommand<Definition>.main()
    }

    /// Starts a service in this process; `stop()` shuts it down gracefully. Does not touch the global
    /// logging system, so one test process can run several services.
    public static func start<Definition: ServiceDefinition>(
        _ definition: Definition.Type,
        configuration: ServiceConfiguration,
        clock: any WallClock = SystemClock(),
        ids: (any IDGenerator)? = nil,
        logger: Logger? = nil
    ) async throws -> RunningService {
        var logger = logger ?? Logger(label: "yedi.\(configuration.name)")
        logger.logLevel = configuration.logLevel
        let assembly = try await Assembly.make(
            definition, configuration: configuration, clock: clock, ids: ids ?? RandomIDGenerator(clock: clock),
            logger: logger)
        let group = ServiceGroup(
            configuration: .init(services: assembly.services, gracefulShutdownSignals: [], logger: logger))
        let task = Task {
            do {
                try await group.run()
            } catch {
                await assembly.engine.close()
                throw error
            }
            await assembly.engine.close()
        }
        return RunningService(assembly: assembly, group: group, task: task)
    }

    /// Runs until SIGTERM or SIGINT, then shuts down gracefully.
    static func run<Definition: ServiceDefinition>(
        _ definition: Definition.Type,
        configuration: ServiceConfiguration,
        logger: Logger
    ) async throws {
        let clock = SystemClock()
        let assembly = try await Assembly.make(
            definition, configuration: configuration, clock: clock, ids: RandomIDGenerator(clock: clock),
            logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                services: assembly.services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        logger.info(
            "starting",
            metadata: [
                "rpc": "\(configuration.host):\(configuration.port)",
                "metrics": "127.0.0.1:\(configuration.metricsPort)",
                "data": "\(configuration.dataDirectory)",
                "database": "\(assembly.databaseDescription)",
                "peers": "\(assembly.environment.peers.names)",
            ]
        )
        do {
            try await group.run()
        } catch {
            await assembly.engine.close()
            throw error
        }
        await assembly.engine.close()
        logger.info("stopped")
    }
}

/// A service started in this process by `ServiceRunner.start`.
public final class RunningService: Sendable {
    public let environment: ServiceEnvironment
    public let server: RPCServer
    private let observability: ObservabilityServer
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    fileprivate init(assembly: Assembly, group: ServiceGroup, task: Task<Void, any Error>) {
        self.environment = assembly.environment
        self.server = assembly.server
        self.observability = assembly.observability
        self.group = group
        self.task = task
    }

    /// The RPC port, once listening.
    public var port: Int {
        get async throws {
            guard let port = try await server.listeningAddress().port else {
                throw RPCError(code: .internalError, message: "the server has no port")
            }
            return port
        }
    }

    /// The `/metrics` and `/healthz` port, once listening.
    public var metricsPort: Int { get async throws { try await observability.port } }

    /// Shuts down gracefully (calls in flight finish, workers stop) and closes the database.
    public func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }
}

/// The parts of a running service, put together in the order they depend on each other.
private struct Assembly {
    var engine: OpenedEngine
    var environment: ServiceEnvironment
    var server: RPCServer
    var observability: ObservabilityServer
    var services: [ServiceGroupConfiguration.ServiceConfiguration]

    /// For the start's log line: the SQLite file, or the PostgreSQL address (no password: it is never in
    /// the settings).
    var databaseDescription: String {
        switch environment.configuration.database {
        case .sqlite: "sqlite in \(environment.configuration.dataDirectory)"
        case .postgres(let settings): "postgresql \(settings.displayAddress)"
        }
    }

    static func make<Definition: ServiceDefinition>(
        _ definition: Definition.Type,
        configuration: ServiceConfiguration,
        clock: any WallClock,
        ids: any IDGenerator,
        logger: Logger
    ) async throws -> Assembly {
        try await StartupChecks.run(configuration)
        try OpenedEngine.check(definition, configuration: configuration)
        let clock = configuration.devClock ? AdjustableClock(base: clock) : clock
        if configuration.development {
            logger.warning("DEVELOPMENT MODE: started with --development; development-only features may be on.")
        }
        if configuration.devClock {
            logger.warning(
                "DEVELOPMENT CLOCK: started with --dev-clock, so yedi.runtime.DevClock/AdvanceClock can move this process's clock forward. Never in production."
            )
        }
        // Before anything creates a metric: metrics made earlier stay bound to the no-op backend.
        let registry = YediMetrics.bootstrapPrometheus()
        let deploymentKey = try LogKey.load(configuration)
        let userTag = LogKey.userTag(deploymentKey)
        let apps = try AppCatalog.load(configuration)
        let jwtVerifier = try TokenKeys.verifier(configuration: configuration, apps: apps, clock: clock)
        let signingKey = Definition.issuesTokens ? try TokenKeys.signingKey(configuration: configuration) : nil
        let engine = try await OpenedEngine.open(definition, configuration: configuration, logger: logger)
        do {
            let group = MultiThreadedEventLoopGroup.singleton
            let peers = try ServicePeers(configuration: configuration, logger: logger, eventLoopGroup: group)
            let outbox = Outbox(ids: ids, clock: clock)
            let revokedUsers = try await engine.revokedUsers(clock: clock)
            let tokenVerifier = CachingTokenVerifier(
                verifier: jwtVerifier, revocations: revokedUsers,
                cache: LRUCache(
                    name: "access-tokens", capacity: CachingTokenVerifier.defaultCapacity,
                    metricsFactory: MetricsSystem.factory))
            let userCalls = UserCallTracker(revokedUsers: revokedUsers)
            let environment = ServiceEnvironment(
                configuration: configuration,
                logger: logger,
                engine: engine.engine,
                peers: peers,
                tokenVerifier: tokenVerifier,
                apps: apps,
                revokedUsers: revokedUsers,
                tokenSigningKey: signingKey,
                clock: clock,
                ids: ids,
                outbox: outbox,
                pageCursorKey: PageCursorKey(deriving: deploymentKey),
                metrics: MetricsSystem.factory
            )
            let services = try await Definition.makeServices(environment)
            let server = try RPCServer(
                configuration: ServerConfiguration(
                    host: configuration.host,
                    port: configuration.port,
                    tls: .server(
                        certificateChainFile: configuration.certificateFile,
                        privateKeyFile: configuration.privateKeyFile,
                        trustRootsFile: configuration.caFile,
                        // Service certificates identify internal callers; end users come with tokens instead.
                        clientCertificateVerification: .optional
                    ),
                    limits: WireLimits(maxFrameBytes: configuration.maxFrameBytes),
                    shutdownGracePeriod: configuration.shutdownGrace,
                    userTag: userTag
                ),
                services: services + [
                    DevClockService(clock: clock as? AdjustableClock, logger: logger),
                    RevocationService(
                        revokedUsers: revokedUsers, engine: engine.engine, calls: userCalls,
                        onRevoked: { await environment.userRevoked($0) }),
                    UserChangeService(onChanged: { await environment.userChanged($0) }),
                ],
                placeholders: Definition.placeholders,
                interceptors: [
                    ServerTracingInterceptor(),
                    ServerLoggingInterceptor(requestIDs: { ids.next() }),
                    ServerMetricsInterceptor(),
                    AuthenticationInterceptor(verifier: tokenVerifier, servedApps: apps.served),
                    userCalls,
                ],
                logger: logger
            )
            let observability = ObservabilityServer(
                configuration: .init(host: "127.0.0.1", port: configuration.metricsPort),
                registry: registry,
                logger: logger,
                isServing: { server.health.status(of: "") == .serving }
            )
            let worker = engine.outboxWorker(
                outbox: outbox, peers: peers, logger: logger, configuration: configuration)
            // Started in this order, stopped in the reverse one.
            var members: [any Service] = peers.services
            members.append(worker)
            members.append(engine.schedulerWorker(scheduler: environment.scheduler, logger: logger))
            if case .postgres(let postgres) = engine.engine {
                members.append(
                    PostgresRevocationRefresh(postgres: postgres, revokedUsers: revokedUsers, logger: logger))
            }
            members += environment.backgroundServices
            members.append(server)
            members.append(observability)
            if case .postgres(let postgres) = engine.engine {
                members.append(PostgresHealthWatch(postgres: postgres, server: server, logger: logger))
            }
            members += environment.drainingServices
            if let notifier = SystemdNotifier(server: server, observability: observability, logger: logger) {
                members.append(notifier)
            }
            return Assembly(
                engine: engine,
                environment: environment,
                server: server,
                observability: observability,
                services: members.map { .init(service: $0) }
            )
        } catch {
            await engine.close()
            throw error
        }
    }
}
