import Logging
import PostgresNIO
import RPCCore
import ServiceLifecycle

/// Keeps a replica's health in step with its PostgreSQL database: every `interval` a `SELECT 1` (bounded
/// by `--database-timeout`); while it fails, every hosted service and the server itself ("") are
/// NOT_SERVING, so `Health/Check`, `Health/Watch` and `/healthz` send clients and load balancers to the
/// other replicas; once it answers again, SERVING, without a restart. The same while a component reports
/// trouble (`ServicePostgres.reportTrouble`: ChatService's lost notification listener).
///
/// Runs after the RPC server in the service group, so that on shutdown it stops first and never sets a
/// draining server back to SERVING.
public final class PostgresHealthWatch: Service {
    public static let defaultInterval: Duration = .seconds(1)

    private let postgres: ServicePostgres
    private let server: RPCServer
    private let logger: Logger
    private let interval: Duration

    public init(postgres: ServicePostgres, server: RPCServer, logger: Logger, interval: Duration = defaultInterval) {
        self.postgres = postgres
        self.server = server
        self.logger = logger
        self.interval = interval
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var answering = true
            while !Task.isCancelled {
                let reason = await self.check()
                // Set on every failed check, not only the first: the server marks itself SERVING when it
                // starts listening, which may come after this watch's first check.
                if reason != nil { self.set(.notServing) }
                if (reason == nil) != answering {
                    answering = reason == nil
                    if answering { self.set(.serving) }
                    if let reason {
                        self.logger.warning(
                            "database not answering: NOT_SERVING until it does",
                            metadata: ["database": "\(self.postgres.settings.displayAddress)", "reason": "\(reason)"])
                    } else {
                        self.logger.notice("database answering again: SERVING")
                    }
                }
                try? await Task.sleep(for: self.interval)
            }
        }
    }

    /// Nil when the database answered and nothing else reported trouble, else why not.
    private func check() async -> String? {
        do {
            try await postgres.read { connection in _ = try await connection.query("SELECT 1", logger: self.logger) }
            return postgres.trouble
        } catch {
            return "\(error)"
        }
    }

    private func set(_ status: HealthService.Status) {
        for service in Set(server.methods.map(\.service)) { server.health.setStatus(status, for: service) }
        server.health.setStatus(status, for: "")
    }
}
