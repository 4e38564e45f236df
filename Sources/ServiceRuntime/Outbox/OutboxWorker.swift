import Foundation
import GRDB
import Logging
import RPCCore
import ServiceLifecycle
import YediProto

/// Delivers the outbox's jobs to their peers (and in-process senders), oldest first per peer, the peers
/// in parallel, until each job is accepted.
///
/// A job that fails (peer down, timeout, any error status) is retried with exponential backoff up to
/// `maximumBackoff`, for ever: the change that wrote it has committed, so giving up would leave the
/// system inconsistent. The one exception is an outside sender's `UndeliverableMessage` (the provider
/// refused the message for good, e.g. a dead device token): that job is dropped, logged and reported to
/// `Outbox.onUndeliverable`. Failures show in the log and in `runtime_outbox.attempts` / `last_error`.
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
            var backoff = DeliveryBackoff()
            while !Task.isCancelled {
                let next = await self.deliverDueJobs(backoff: &backoff)
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

    /// When each failed job, and each peer that failed, may be tried again.
    ///
    /// Per peer: after a failure the peer's other jobs wait too, so a peer that is down costs one
    /// attempt per backoff, not one per job; the other peers are not affected.
    private struct DeliveryBackoff {
        var jobs: [String: ContinuousClock.Instant] = [:]
        var peers: [String: ContinuousClock.Instant] = [:]

        func isWaiting(_ job: Job, now: ContinuousClock.Instant) -> Bool {
            (jobs[job.id].map { $0 > now } ?? false) || (peers[job.peer].map { $0 > now } ?? false)
        }
    }

    /// What delivering one peer's due jobs came to.
    private struct PeerRound: Sendable {
        var delivered: [String] = []
        /// The job that failed (the round stops at it) and when it, and its peer, may be tried again.
        var failed: (job: String, retryAt: ContinuousClock.Instant)?
    }

    /// Delivers every job that is due, each peer's jobs in order and the peers in parallel (one hung
    /// peer delays only its own jobs); returns when the earliest one in backoff becomes due.
    private func deliverDueJobs(backoff: inout DeliveryBackoff) async -> ContinuousClock.Instant? {
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
        backoff.jobs = backoff.jobs.filter { pending.contains($0.key) }
        let now = ContinuousClock.now
        let due = Dictionary(grouping: jobs.filter { !backoff.isWaiting($0, now: now) }, by: \.peer)
        let rounds = await withTaskGroup(of: (String, PeerRound).self) { group in
            for (peer, peerJobs) in due {
                group.addTask { (peer, await self.deliver(peerJobs)) }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for (peer, round) in rounds {
            for id in round.delivered { backoff.jobs[id] = nil }
            if let failed = round.failed {
                backoff.jobs[failed.job] = failed.retryAt
                backoff.peers[peer] = failed.retryAt
            } else {
                backoff.peers[peer] = nil
            }
        }
        return backoff.jobs.values.min()
    }

    /// Whether `job` is still in the table.
    private func isPending(_ job: Job) async throws -> Bool {
        try await database.read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM runtime_outbox WHERE id = ?", arguments: [job.id]) == true
        }
    }

    /// Delivers one peer's jobs in order, stopping at the first failure.
    private func deliver(_ jobs: [Job]) async -> PeerRound {
        var round = PeerRound()
        for job in jobs where Task.isCancelled == false {
            do {
                // An outside message read in this round may have been dropped since (a deleted account's:
                // `Outbox.dropOutsideMessages`); it must not go out.
                if OutsideMessageKind(rawValue: job.peer) != nil, try await !isPending(job) { continue }
                try await deliver(job)
                try await database.write { db in
                    try db.execute(sql: "DELETE FROM runtime_outbox WHERE id = ?", arguments: [job.id])
                }
                round.delivered.append(job.id)
                logger.debug("outbox: delivered", metadata: ["job": "\(job.id)", "method": "\(job.method)"])
            } catch let refused as UndeliverableMessage where refused.dropsJob {
                // Retrying cannot help and would hold back every later job of this destination.
                logger.error(
                    "outbox: the provider refused the message for good; job dropped",
                    metadata: ["job": "\(job.id)", "destination": "\(job.peer)", "error": "\(refused)"])
                do {
                    try await database.write { db in
                        try db.execute(sql: "DELETE FROM runtime_outbox WHERE id = ?", arguments: [job.id])
                    }
                } catch {
                    round.failed = (job.id, .now + backoff(afterAttempts: job.attempts + 1))
                    break
                }
                round.delivered.append(job.id)
                await outbox.reportUndeliverable(
                    UndeliverableJob(id: job.id, destination: job.peer, payload: job.payload, error: refused))
            } catch {
                if Task.isCancelled { break }
                let attempts = job.attempts + 1
                let delay = backoff(afterAttempts: attempts)
                round.failed = (job.id, .now + delay)
                logger.warning(
                    "outbox: delivery failed; will retry",
                    metadata: [
                        "job": "\(job.id)", "peer": "\(job.peer)", "method": "\(job.method)", "attempt": "\(attempts)",
                        "retry-in": "\(delay)", "error": "\(error)",
                    ]
                )
                _ = try? await database.write { db in
                    try db.execute(
                        sql: "UPDATE runtime_outbox SET attempts = ?, last_error = ? WHERE id = ?",
                        arguments: [attempts, String(describing: error).prefix(500).description, job.id])
                }
                break
            }
        }
        return round
    }

    private func deliver(_ job: Job) async throws {
        if let sender = outbox.sender(for: job.peer) {
            try await sender.send(payload: job.payload, jobID: job.id)
            return
        }
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
