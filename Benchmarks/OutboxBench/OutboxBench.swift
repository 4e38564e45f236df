import ArgumentParser
import Foundation
import Logging
import PostgresNIO
import PostgresTestSupport
import ServiceRuntime
import Synchronization
import YediProto

/// The outbox on PostgreSQL across replicas (docs/postgres.md, "The outbox on PostgreSQL"): a backlog of
/// jobs drained by the workers of 1 replica, then of 3, each replica with its own pool on one database, as
/// separate processes have; every delivery takes `--delivery-ms` (the peer's answer). Prints one JSON line
/// per run: jobs per second, and deliveries beyond one per job (must be 0).
///
///     eval "$(deploy/postgres-dev.sh --test --env)"
///     swift build -c release --product outbox-bench && $(swift build -c release --show-bin-path)/outbox-bench
///
/// Each run uses a throwaway database (the test role's), dropped afterwards.
@main
struct OutboxBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox-bench", abstract: "Outbox jobs delivered per second by 1 and 3 replicas on PostgreSQL.")

    @Option(help: "Jobs in the backlog of each run.")
    var jobs = 3_000

    @Option(help: "Milliseconds each delivery takes.")
    var deliveryMs = 2

    @Option(help: "Replica counts to measure, in order.")
    var replicas: [Int] = [1, 3]

    @Option(help: "Runs per replica count (the figure is each run's; compare runs of one invocation).")
    var runs = 2

    mutating func run() async throws {
        var rates: [Int: [Double]] = [:]
        for run in 1...runs {
            for count in replicas {
                let result = try await Self.measure(replicas: count, jobs: jobs, delivery: .milliseconds(deliveryMs))
                rates[count, default: []].append(result.rate)
                print(
                    #"{"bench": "outbox", "run": \#(run), "replicas": \#(count), "jobs": \#(jobs), "#
                        + #""delivery_ms": \#(deliveryMs), "seconds": \#(String(format: "%.2f", result.seconds)), "#
                        + #""jobs_per_second": \#(Int(result.rate)), "extra_deliveries": \#(result.extra)}"#)
            }
        }
        if let one = rates[1], let three = rates[3] {
            let ratio = (three.reduce(0, +) / Double(three.count)) / (one.reduce(0, +) / Double(one.count))
            print(#"{"bench": "outbox", "three_over_one": \#(String(format: "%.2f", ratio))}"#)
        }
    }

    /// Enqueues the backlog, then starts `replicas` workers and times them until every job was delivered.
    static func measure(replicas: Int, jobs: Int, delivery: Duration) async throws -> (
        seconds: Double, rate: Double, extra: Int
    ) {
        var logger = Logger(label: "outbox-bench")
        logger.logLevel = .error
        let settings = try await TestPostgres.makeDatabase()
        var pools: [ServicePostgres] = []
        var runners: [Task<Void, Never>] = []
        for _ in 0..<replicas {
            let pool = try ServicePostgres(settings: settings, logger: logger)
            pools.append(pool)
            runners.append(Task { await pool.run() })
        }
        defer {
            for runner in runners { runner.cancel() }
        }
        try await PostgresMigrator.migrate(
            pools[0], service: "outbox-bench", migrations: RuntimePostgresSchema.migrations)

        let sender = CountingSender(delivery: delivery)
        let outboxes = (0..<replicas).map { _ in
            let outbox = Outbox(ids: RandomIDGenerator(), clock: SystemClock())
            outbox.register(sender, destination: "bench")
            return outbox
        }
        for batch in stride(from: 0, to: jobs, by: 100) {
            let outbox = outboxes[0]
            try await pools[0].write { tx in
                for index in batch..<min(batch + 100, jobs) {
                    _ = try await outbox.enqueue(
                        in: tx, destination: "bench", message: YediCommon.PurgeUserRequest(userID: "user-\(index)"))
                }
            }
        }

        let started = ContinuousClock.now
        let workers = (0..<replicas).map { index in
            let worker = OutboxWorker(
                postgres: pools[index], outbox: outboxes[index], peers: ServicePeers(), logger: logger,
                settings: OutboxWorker.Settings(), replica: "replica-\(index + 1)")
            return Task { _ = try? await worker.run() }
        }
        while sender.distinct < jobs {
            try await Task.sleep(for: .milliseconds(5))
        }
        let elapsed = ContinuousClock.now - started
        // A late second delivery would show a little after the last first one.
        try await Task.sleep(for: .milliseconds(500))
        for worker in workers { worker.cancel() }
        for worker in workers { await worker.value }
        for runner in runners { runner.cancel() }
        for runner in runners { await runner.value }
        try await TestPostgres.drop(settings)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return (seconds, Double(jobs) / seconds, sender.total - sender.distinct)
    }
}

/// The bench's destination: waits `delivery`, then counts the job.
final class CountingSender: OutboxSender {
    private let delivery: Duration
    private let counts = Mutex<[String: Int]>([:])

    init(delivery: Duration) {
        self.delivery = delivery
    }

    var distinct: Int { counts.withLock { $0.count } }
    var total: Int { counts.withLock { $0.values.reduce(0, +) } }

    func send(payload: [UInt8], jobID: String) async throws {
        try await Task.sleep(for: delivery)
        counts.withLock { $0[jobID, default: 0] += 1 }
    }
}
