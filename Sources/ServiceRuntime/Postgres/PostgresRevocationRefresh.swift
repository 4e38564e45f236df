import Logging
import ServiceLifecycle

/// Brings revocations written by the other replicas of this service into this replica's memory, every
/// `interval`: a user deleted or suspended through one replica (or told of it by AccountService through
/// whichever replica its job reached) has their tokens refused by every replica within about a second,
/// not only by the one that wrote the row (docs/postgres.md, "Revocations across replicas").
///
/// A failed read is logged and tried again at the next tick: the health watch reports a database that
/// does not answer.
public final class PostgresRevocationRefresh: Service {
    public static let defaultInterval: Duration = .seconds(1)

    private let postgres: ServicePostgres
    private let revokedUsers: RevokedUsers
    private let logger: Logger
    private let interval: Duration

    public init(
        postgres: ServicePostgres, revokedUsers: RevokedUsers, logger: Logger, interval: Duration = defaultInterval
    ) {
        self.postgres = postgres
        self.revokedUsers = revokedUsers
        self.logger = logger
        self.interval = interval
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let news = try await self.revokedUsers.refresh(from: self.postgres)
                    if news > 0 { self.logger.info("revocations from other replicas", metadata: ["count": "\(news)"]) }
                } catch {
                    self.logger.debug("revocations not refreshed", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: self.interval)
            }
        }
    }
}
