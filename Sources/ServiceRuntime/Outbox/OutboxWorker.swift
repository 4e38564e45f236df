import Foundation
import GRDB
import Logging
import RPCCore
import ServiceLifecycle
import YediProto

/// Delivers the outbox's jobs to their peers, oldest first, until each is accepted.
///
/// A job that fails (peer down, timeout, any error status) is retried with exponential backoff up to
/// `maximumBackoff`, for ever: the change that wrote it has committed, so giving up would leave the
/// system inconsistent. Failures show in the log and in `runtime_outbox.attempts` / `last_error`.
/// Backoff lives in memory: after a restart every pending job is due at once.
public final class OutboxWorker: Service, Sendable {
    private let database: ServiceDatabase
    private let outbox: Outbox
    private let peers: ServicePeers
    private let logger: Logger
    private let settings: Settings

    public struct Settings: Sendable {
        public var initialBackoff: Duration = .milliseconds(200)
        public var maximumBackoff: Duration = .seconds(60)
        /// How long one delivery may take.
        public var deliveryTimeout: Duration = .seconds(10)
        /// A safety net: the worker looks at the table this often even without a wake-up.
        public var pollInterval: Duration = .seconds(5)

        public init() {}
    }

    init(database: ServiceDatabase, outbox: Outbox, peers: ServicePeers, logger: Logger, settings: Settings) {
        self.database = database
        self.outbox = outbox
        self.peers = peers
        self.logger = logger
        self.settings = settings
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var retryAt: [String: ContinuousClock.Instant] = [:]
            while !Task.isCancelled {
                let next = await self.deliverDueJobs(retryAt: &retryAt)
                let wait = next.map { max(.zero, $0 - .now) } ?? self.settings.pollInterval
                await self.outbox.wakeUp.wait(timeout: min(wait, self.settings.pollInterval))
            }
        }
    }

    private struct Job: Sendable {
        var id: String
        var peer: String
        var method: String
        var payload: [UInt8]
        var attempts: Int
    }

    /// Delivers every job that is due; returns when the earliest one in backoff becomes due.
    private func deliverDueJobs(retryAt: inout [String: ContinuousClock.Instant]) async -> ContinuousClock.Instant? {
        let jobs: [Job]
        do {
            jobs = try await database.read { db in
                try Row.fetchAll(
                    db, sql: "SELECT id, peer, method, payload, attempts FROM runtime_outbox ORDER BY rowid"
                )
                .map { row in
                    Job(
                        id: row["id"], peer: row["peer"], method: row["method"],
                        payload: [UInt8]((row["payload"] as Data?) ?? Data()), attempts: row["attempts"])
                }
            }
        } catch {
            if !Task.isCancelled {
                logger.error("outbox: cannot read jobs", metadata: ["error": "\(error)"])
            }
            return .now + settings.pollInterval
        }
        let pending = Set(jobs.map(\.id))
        retryAt = retryAt.filter { pending.contains($0.key) }
        for job in jobs where Task.isCancelled == false {
            if let due = retryAt[job.id], due > .now { continue }
            do {
                try await deliver(job)
                try await database.write { db in
                    try db.execute(sql: "DELETE FROM runtime_outbox WHERE id = ?", arguments: [job.id])
                }
                retryAt[job.id] = nil
                logger.debug("outbox: delivered", metadata: ["job": "\(job.id)", "method": "\(job.method)"])
            } catch {
                if Task.isCancelled { break }
                let attempts = job.attempts + 1
                let delay = backoff(afterAttempts: attempts)
                retryAt[job.id] = .now + delay
                logger.warning(
                    "outbox: delivery failed; will retry",
                    metadata: [
                        "job": "\(job.id)", "method": "\(job.method)", "attempt": "\(attempts)",
                        "retry-in": "\(delay)", "error": "\(error)",
                    ]
                )
                _ = try? await database.write { db in
                    try db.execute(
                        sql: "UPDATE runtime_outbox SET attempts = ?, last_error = ? WHERE id = ?",
                        arguments: [attempts, String(describing: error).prefix(500).description, job.id])
                }
            }
        }
        return retryAt.values.min()
    }

    private func deliver(_ job: Job) async throws {
        guard let method = Self.method(named: job.method) else {
            throw RPCError(code: .unimplemented, message: "unknown method \(job.method)")
        }
        let client = try peers.client(for: job.peer)
        _ = try await client.unary(
            method,
            payload: job.payload,
            options: CallOptions(
                timeout: settings.deliveryTimeout,
                metadata: [Outbox.idempotencyKeyMetadata: job.id],
                retry: false
            )
        )
    }

    private func backoff(afterAttempts attempts: Int) -> Duration {
        let exponent = min(attempts - 1, 20)
        let base = settings.initialBackoff * (1 << exponent)
        let capped = min(base, settings.maximumBackoff)
        // ±20% jitter, so jobs that failed together do not retry together.
        return capped * Double.random(in: 0.8...1.2)
    }

    /// Every method of every Yedi service, by `package.Service/Method`.
    private static let methods: [String: MethodDescriptor] = Dictionary(
        YediProtoCatalog.services.flatMap(\.methods).map { ($0.fullName, $0) },
        uniquingKeysWith: { first, _ in first }
    )

    static func method(named fullName: String) -> MethodDescriptor? { methods[fullName] }
}
