import Foundation
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
///
/// Where the jobs come from is its `OutboxQueue`: on SQLite the whole table, with each failed job's
/// backoff in memory (after a restart every pending job is due at once); on PostgreSQL a few jobs at a
/// time, claimed with a lease, with the backoff stored in the row so that every replica honours it
/// (docs/postgres.md, "The outbox on PostgreSQL").
public final class OutboxWorker: Service, Sendable {
    private let queue: any OutboxQueue
    private let outbox: Outbox
    private let peers: ServicePeers
    private let logger: Logger
    private let settings: Settings
    /// The longest wait between looks at the queue without a wake-up.
    private let pollInterval: Duration

    public struct Settings: Sendable {
        public var initialBackoff: Duration = .milliseconds(200)
        public var maximumBackoff: Duration = .seconds(60)
        /// How long one delivery may take.
        public var deliveryTimeout: Duration = .seconds(10)
        /// A safety net: the worker looks at the table this often even without a wake-up.
        public var pollInterval: Duration = .seconds(5)
        /// PostgreSQL: how often a worker looks for jobs that other replicas enqueued (its own process
        /// wakes it at once after the commit). At most 1 s in production.
        public var replicaPollInterval: Duration = .seconds(1)
        /// PostgreSQL: how long a job's lease outlives `deliveryTimeout` (the lease is taken again right
        /// before each delivery; see `PostgresOutboxQueue`).
        public var leaseMargin: Duration = .seconds(20)
        /// PostgreSQL: the most jobs one claim takes.
        public var claimSize = 16

        public init() {}
    }

    /// The worker of a service on SQLite.
    convenience init(
        database: ServiceDatabase, outbox: Outbox, peers: ServicePeers, logger: Logger, settings: Settings
    ) {
        self.init(
            queue: SQLiteOutboxQueue(database: database), outbox: outbox, peers: peers, logger: logger,
            settings: settings, pollInterval: settings.pollInterval)
    }

    init(
        queue: any OutboxQueue, outbox: Outbox, peers: ServicePeers, logger: Logger, settings: Settings,
        pollInterval: Duration
    ) {
        self.queue = queue
        self.outbox = outbox
        self.peers = peers
        self.logger = logger
        self.settings = settings
        self.pollInterval = pollInterval
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var backoff = PeerBackoff()
            while !Task.isCancelled {
                let next = await self.deliverDueJobs(backoff: &backoff)
                let wait = next.map { max(.zero, $0 - .now) } ?? self.pollInterval
                await self.outbox.wakeUp.wait(timeout: min(wait, self.pollInterval))
            }
        }
    }

    /// When each peer that failed may be tried again: after a failure the peer's other jobs wait too, so
    /// a peer that is down costs one attempt per backoff, not one per job; the other peers are not
    /// affected.
    private struct PeerBackoff {
        var peers: [String: ContinuousClock.Instant] = [:]

        func waiting(at now: ContinuousClock.Instant) -> Set<String> {
            Set(peers.filter { $0.value > now }.keys)
        }
    }

    /// What delivering one peer's due jobs came to: the job that failed (the round stops at it) and when
    /// it, and its peer, may be tried again.
    private struct PeerRound: Sendable {
        var failed: (retryAt: ContinuousClock.Instant, delay: Duration)?
    }

    /// Delivers every job that is due, each peer's jobs in order and the peers in parallel (one hung
    /// peer delays only its own jobs); returns when to look again (nil: at the poll).
    private func deliverDueJobs(backoff: inout PeerBackoff) async -> ContinuousClock.Instant? {
        let batch: OutboxBatch
        do {
            batch = try await queue.takeDueJobs(skippingPeers: backoff.waiting(at: .now))
        } catch {
            if !Task.isCancelled {
                logger.error("outbox: cannot read jobs", metadata: ["error": "\(error)"])
            }
            return .now + pollInterval
        }
        let due = Dictionary(grouping: batch.jobs, by: \.peer)
        let rounds = await withTaskGroup(of: (String, PeerRound).self) { group in
            for (peer, peerJobs) in due {
                group.addTask { (peer, await self.deliver(peerJobs)) }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for (peer, round) in rounds {
            backoff.peers[peer] = round.failed?.retryAt
        }
        return batch.more ? .now : queue.nextRetry()
    }

    /// Delivers one peer's jobs in order, stopping at the first failure; the jobs after it are handed
    /// back to the queue.
    private func deliver(_ jobs: [OutboxJob]) async -> PeerRound {
        var round = PeerRound()
        var next = jobs.startIndex
        while next < jobs.endIndex, !Task.isCancelled {
            let job = jobs[next]
            next += 1
            do {
                // An outside message taken in this round may have been dropped since (a deleted account's:
                // `Outbox.dropOutsideMessages`); it must not go out. On PostgreSQL this also renews the lease.
                guard try await queue.isStillToDeliver(job) else { continue }
                try await deliver(job)
                try await queue.delete(job)
                logger.debug("outbox: delivered", metadata: ["job": "\(job.id)", "method": "\(job.method)"])
            } catch let refused as UndeliverableMessage where refused.dropsJob {
                // Retrying cannot help and would hold back every later job of this destination.
                logger.error(
                    "outbox: the provider refused the message for good; job dropped",
                    metadata: ["job": "\(job.id)", "destination": "\(job.peer)", "error": "\(refused)"])
                do {
                    try await queue.delete(job)
                } catch {
                    let delay = backoff(afterAttempts: job.attempts + 1)
                    await queue.retry(job, in: delay)
                    round.failed = (.now + delay, delay)
                    break
                }
                await outbox.reportUndeliverable(
                    UndeliverableJob(id: job.id, destination: job.peer, payload: job.payload, error: refused))
            } catch {
                if Task.isCancelled {
                    next -= 1  // not delivered: handed back below
                    break
                }
                let attempts = job.attempts + 1
                let delay = backoff(afterAttempts: attempts)
                round.failed = (.now + delay, delay)
                logger.warning(
                    "outbox: delivery failed; will retry",
                    metadata: [
                        "job": "\(job.id)", "peer": "\(job.peer)", "method": "\(job.method)", "attempt": "\(attempts)",
                        "retry-in": "\(delay)", "error": "\(error)",
                    ]
                )
                try? await queue.recordFailure(
                    job, attempts: attempts, error: String(describing: error).prefix(500).description, retryIn: delay)
                break
            }
        }
        if next < jobs.endIndex {
            let untried = Array(jobs[next...])
            let delay = round.failed?.delay ?? .zero
            // Not in this task: a stopping worker's task is cancelled, and the hand-back must still run.
            let queue = self.queue
            await Task { await queue.giveBack(untried, notBefore: delay) }.value
        }
        return round
    }

    private func deliver(_ job: OutboxJob) async throws {
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
