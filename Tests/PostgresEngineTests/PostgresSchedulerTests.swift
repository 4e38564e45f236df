import Foundation
import Logging
import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import ServiceRuntime

/// The scheduler on PostgreSQL (docs/postgres.md, "The scheduler on PostgreSQL"): the SQLite scheduler's
/// promises kept on a database that several replicas share. A job commits with its transaction, runs
/// once when the injected clock reaches it, in the transaction that deletes it (a failed run leaves no
/// effect and is tried again later), and two replicas' workers never run one job twice.
/// (@unchecked: the closures read the fixed clock and the database set in setUp.)
final class PostgresSchedulerTests: XCTestCase, @unchecked Sendable {
    private var database: TestDatabase!
    private let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))

    override func setUp() async throws {
        database = try await TestDatabase(
            service: "scheduler",
            migrations: RuntimePostgresSchema.migrations + [
                PostgresMigration(
                    "test-effects",
                    [
                        """
                        CREATE TABLE effect (
                            seq bigint GENERATED ALWAYS AS IDENTITY, job_id text NOT NULL, attempt integer NOT NULL)
                        """
                    ])
            ])
    }

    override func tearDown() async throws {
        try await database?.close()
        database = nil
    }

    private var postgres: ServicePostgres { database.postgres }

    /// A replica's scheduler whose "note" jobs record their id in `effect`, and its worker on `postgres`.
    private func replica(_ postgres: ServicePostgres) -> (Scheduler, SchedulerWorker) {
        let scheduler = Scheduler(clock: clock)
        scheduler.handle("note", postgres: Self.note)
        return (scheduler, SchedulerWorker(postgres: postgres, scheduler: scheduler, logger: TestPostgres.logger))
    }

    private static let note: Scheduler.PostgresHandler = { job, tx in
        try await tx.query("INSERT INTO effect (job_id, attempt) VALUES (\(job.id), \(job.attempts))")
    }

    private func job(_ id: String, inSeconds seconds: Int64, subject: String? = nil, kind: String = "note")
        -> ScheduledJob
    {
        ScheduledJob(
            id: id, kind: kind, subject: subject, payload: Array(id.utf8),
            dueAtMilliseconds: clock.nowMilliseconds + seconds * 1_000)
    }

    private func effects() async throws -> [String] {
        try await postgres.read { connection in
            try await connection.query("SELECT job_id FROM effect ORDER BY seq", logger: TestPostgres.logger)
                .collect().map { try $0.decode(String.self) }
        }
    }

    private func pending() async throws -> Int {
        try await postgres.read { connection in
            try await connection.query("SELECT count(*) FROM runtime_scheduled_job", logger: TestPostgres.logger)
                .collect().first?.decode(Int.self) ?? -1
        }
    }

    func testPostgresSchedulerRunsADueJobOnceAndNotBeforeTheClockReachesIt() async throws {
        let (scheduler, worker) = replica(postgres)
        try await postgres.write { tx in
            try await scheduler.schedule(self.job("now", inSeconds: 0, subject: "s"), in: tx)
            try await scheduler.schedule(self.job("later", inSeconds: 60), in: tx)
        }
        let stored = try await postgres.write { tx in try await scheduler.jobs(subject: "s", in: tx) }
        XCTAssertEqual(stored, [job("now", inSeconds: 0, subject: "s")], "every field as written")
        let next = await worker.runDueJobs()
        XCTAssertEqual(next, clock.nowMilliseconds + 60_000, "it sleeps until the next job is due")
        let first = try await effects()
        XCTAssertEqual(first, ["now"])
        _ = await worker.runDueJobs()
        let again = try await effects()
        XCTAssertEqual(again, ["now"], "once")

        clock.advance(by: 60)
        let none = await worker.runDueJobs()
        XCTAssertNil(none, "nothing left")
        let all = try await effects()
        XCTAssertEqual(all, ["now", "later"])
        let left = try await pending()
        XCTAssertEqual(left, 0)
    }

    /// A job scheduled by a transaction that rolls back never existed.
    func testPostgresJobIsScheduledOnlyIfItsTransactionCommits() async throws {
        let (scheduler, worker) = replica(postgres)
        struct Abort: Error {}
        do {
            try await postgres.write { tx in
                try await scheduler.schedule(self.job("doomed", inSeconds: 0), in: tx)
                throw Abort()
            }
            XCTFail("the transaction committed")
        } catch is Abort {}
        let left = try await pending()
        XCTAssertEqual(left, 0)
        _ = await worker.runDueJobs()
        let ran = try await effects()
        XCTAssertEqual(ran, [])
    }

    func testPostgresSchedulingTwiceIsHarmlessAndJobsAreMovedAndCancelledBySubject() async throws {
        let (scheduler, worker) = replica(postgres)
        let added = try await postgres.write { tx in
            [
                try await scheduler.schedule(self.job("reminder:r1", inSeconds: 10, subject: "r1"), in: tx),
                try await scheduler.schedule(self.job("reminder:r1", inSeconds: 99, subject: "r1"), in: tx),
                try await scheduler.schedule(self.job("expiry:r1", inSeconds: 20, subject: "r1", kind: "x"), in: tx),
                try await scheduler.schedule(self.job("reminder:r2", inSeconds: 10, subject: "r2"), in: tx),
                try await scheduler.schedule(self.job("reminder:r3", inSeconds: 10, subject: "r3"), in: tx),
            ]
        }
        XCTAssertEqual(added, [true, false, true, true, true], "the same id twice is one job")
        let moved = try await postgres.write { tx in
            [
                try await scheduler.move(id: "reminder:r2", to: self.clock.nowMilliseconds + 500_000, in: tx),
                try await scheduler.move(id: "missing", to: 0, in: tx),
            ]
        }
        XCTAssertEqual(moved, [true, false])
        let jobs = try await postgres.write { tx in try await scheduler.jobs(subject: "r1", in: tx).map(\.id) }
        XCTAssertEqual(jobs, ["reminder:r1", "expiry:r1"], "soonest first")
        let cancelled = try await postgres.write { tx in
            [
                try await scheduler.cancel(subject: "r1", kind: "x", in: tx),
                try await scheduler.cancel(subject: "r1", in: tx),
                try await scheduler.cancel(id: "reminder:r3", in: tx) ? 1 : 0,
                try await scheduler.cancel(id: "reminder:r3", in: tx) ? 1 : 0,
            ]
        }
        XCTAssertEqual(cancelled, [1, 1, 1, 0])
        clock.advance(by: 100)
        _ = await worker.runDueJobs()
        let ran = try await effects()
        XCTAssertEqual(ran, [], "r1's and r3's were cancelled, r2's moved past the clock")
        clock.advance(by: 500)
        _ = await worker.runDueJobs()
        let later = try await effects()
        XCTAssertEqual(later, ["reminder:r2"])
    }

    func testPostgresSchedulerRetriesAFailedJobWithItsEffectsRolledBack() async throws {
        let scheduler = Scheduler(clock: clock)
        scheduler.handle(
            "flaky",
            postgres: { job, tx in
                try await Self.note(job, tx)
                struct NotYet: Error {}
                if job.attempts < 2 { throw NotYet() }
            })
        let worker = SchedulerWorker(postgres: postgres, scheduler: scheduler, logger: TestPostgres.logger)
        try await postgres.write { tx in
            try await scheduler.schedule(self.job("f", inSeconds: 0, kind: "flaky"), in: tx)
        }
        let next = await worker.runDueJobs()
        XCTAssertEqual(next, clock.nowMilliseconds + 1_000, "retried after 1 s")
        clock.advance(by: 1)
        let next2 = await worker.runDueJobs()
        XCTAssertEqual(next2, clock.nowMilliseconds + 2_000, "then 2 s")
        let none = try await effects()
        XCTAssertEqual(none, [], "a failed run's effects are rolled back with it")
        clock.advance(by: 2)
        _ = await worker.runDueJobs()
        let attempts = try await postgres.read { connection in
            try await connection.query("SELECT attempt FROM effect", logger: TestPostgres.logger)
                .collect().map { try $0.decode(Int.self) }
        }
        XCTAssertEqual(attempts, [2], "the third run committed, once")
    }

    /// A kind this replica does not handle (a version rolled back, or another replica's newer kind) waits.
    func testPostgresJobOfAKindNobodyHandlesWaits() async throws {
        let (scheduler, worker) = replica(postgres)
        try await postgres.write { tx in
            try await scheduler.schedule(self.job("x", inSeconds: 0, kind: "future"), in: tx)
        }
        _ = await worker.runDueJobs()
        let left = try await pending()
        XCTAssertEqual(left, 1)
        scheduler.handle("future", postgres: Self.note)
        clock.advance(by: 1)
        _ = await worker.runDueJobs()
        let ran = try await effects()
        XCTAssertEqual(ran, ["x"])
    }

    /// Two replicas, each with its own pool, scheduler and worker, work through 200 due jobs at once:
    /// every job runs, none twice.
    func testTwoReplicasRunEachOf200JobsOnce() async throws {
        let other = try ServicePostgres(settings: database.settings, logger: TestPostgres.logger)
        let runner = Task { await other.run() }
        defer { runner.cancel() }
        let (scheduler, first) = replica(postgres)
        let (_, second) = replica(other)
        try await postgres.write { tx in
            for index in 0..<200 {
                try await scheduler.schedule(self.job("job-\(index)", inSeconds: 0), in: tx)
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for worker in [first, second, first, second] { group.addTask { _ = await worker.runDueJobs() } }
        }
        let ran = try await effects()
        XCTAssertEqual(ran.count, 200, "each job once")
        XCTAssertEqual(Set(ran).count, 200)
        let left = try await pending()
        XCTAssertEqual(left, 0)
    }

    /// While one replica runs a job (its transaction open), another replica's worker passes over it and
    /// runs the next one instead of waiting for it or running it too.
    func testAJobRunningOnOneReplicaIsSkippedByTheOther() async throws {
        let other = try ServicePostgres(settings: database.settings, logger: TestPostgres.logger)
        let runner = Task { await other.run() }
        defer { runner.cancel() }
        let started = AsyncStream<Void>.makeStream()
        let release = AsyncStream<Void>.makeStream()
        let slowScheduler = Scheduler(clock: clock)
        slowScheduler.handle(
            "note",
            postgres: { job, tx in
                try await Self.note(job, tx)
                started.continuation.yield()
                for await _ in release.stream { break }
            })
        let slow = SchedulerWorker(postgres: postgres, scheduler: slowScheduler, logger: TestPostgres.logger)
        let (scheduler, fast) = replica(other)
        try await postgres.write { tx in
            try await scheduler.schedule(self.job("a", inSeconds: 0), in: tx)
            try await scheduler.schedule(self.job("b", inSeconds: 1), in: tx)
        }
        clock.advance(by: 1)
        let slowRun = Task { await slow.runDueJobs() }
        for await _ in started.stream { break }  // "a" is running on the slow replica
        _ = await fast.runDueJobs()
        let whileSlow = try await effects()
        XCTAssertEqual(whileSlow, ["b"], "the other replica ran only the job nobody held")
        release.continuation.finish()
        _ = await slowRun.value
        let all = try await effects()
        XCTAssertEqual(all.sorted(), ["a", "b"])
    }

    /// The worker sleeps until the soonest job, and wakes at once when this replica schedules a due job
    /// or the clock moves.
    func testPostgresSchedulerWorkerWakesWhenAJobIsScheduledAndWhenTheClockMoves() async throws {
        let (scheduler, worker) = replica(postgres)
        let running = Task { try await worker.run() }
        defer { running.cancel() }
        try await postgres.write { tx in try await scheduler.schedule(self.job("in-an-hour", inSeconds: 3_600), in: tx)
        }
        try await Task.sleep(for: .milliseconds(200))
        let early = try await effects()
        XCTAssertEqual(early, [])
        clock.advance(by: 3_600)  // far less than the worker's 60 s poll: the move wakes it
        let ran = try await eventually { try await self.effects() == ["in-an-hour"] }
        XCTAssertTrue(ran, "moving the clock ran the job")
        try await postgres.write { tx in try await scheduler.schedule(self.job("at-once", inSeconds: 0), in: tx) }
        let woken = try await eventually { try await self.effects().count == 2 }
        XCTAssertTrue(woken, "scheduling a due job woke the worker")
    }

    private func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }
}
