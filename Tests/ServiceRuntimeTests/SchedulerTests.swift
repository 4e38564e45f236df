import Foundation
import GRDB
import Logging
import ServiceTestSupport
import XCTest

@testable import ServiceRuntime

/// The durable scheduler: jobs commit with the change that writes them, run once in the transaction that
/// deletes them, follow the injected clock, survive a restart, and never run twice with two workers on
/// one database file. (@unchecked: the closures read the fixed clock and the folder set in setUp.)
final class SchedulerTests: XCTestCase, @unchecked Sendable {
    private var directory: String!
    private let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))

    override func setUpWithError() throws {
        directory =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-scheduler-\(UUID().uuidString)").path
        addTeardownBlock { [directory] in try? FileManager.default.removeItem(atPath: directory!) }
    }

    /// The service's database, with a table the test jobs write their effects into.
    private func open() throws -> ServiceDatabase {
        try ServiceDatabase.open(
            directory: directory, name: "scheduler",
            migrations: { migrator in
                migrator.registerMigration("test-effects") { db in
                    try db.execute(sql: "CREATE TABLE effect (job_id TEXT NOT NULL, attempt INTEGER NOT NULL)")
                }
            }, logger: Logger(label: "test"))
    }

    /// A scheduler whose "note" jobs record their id in `effect`, and the worker that runs them.
    private func scheduler(_ database: ServiceDatabase) -> (Scheduler, SchedulerWorker) {
        let scheduler = Scheduler(clock: clock)
        scheduler.handle("note") { job, db in
            try db.execute(
                sql: "INSERT INTO effect (job_id, attempt) VALUES (?, ?)", arguments: [job.id, job.attempts])
        }
        return (scheduler, SchedulerWorker(database: database, scheduler: scheduler, logger: Logger(label: "test")))
    }

    private func job(_ id: String, inSeconds seconds: Int64, subject: String? = nil, kind: String = "note")
        -> ScheduledJob
    {
        ScheduledJob(
            id: id, kind: kind, subject: subject, payload: Array(id.utf8),
            dueAtMilliseconds: clock.nowMilliseconds + seconds * 1_000)
    }

    private func effects(_ database: ServiceDatabase) async throws -> [String] {
        try await database.read { db in try String.fetchAll(db, sql: "SELECT job_id FROM effect ORDER BY rowid") }
    }

    private func pending(_ database: ServiceDatabase) async throws -> Int {
        try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_scheduled_job") ?? 0 }
    }

    func testSchedulerRunsADueJobOnceAndNotBeforeTheClockReachesIt() async throws {
        let database = try open()
        let (scheduler, worker) = scheduler(database)
        try await database.write { db in
            try scheduler.schedule(self.job("now", inSeconds: 0), in: db)
            try scheduler.schedule(self.job("later", inSeconds: 60), in: db)
        }
        let next = await worker.runDueJobs()
        XCTAssertEqual(next, clock.nowMilliseconds + 60_000, "it sleeps until the next job is due")
        let first = try await effects(database)
        XCTAssertEqual(first, ["now"])
        _ = await worker.runDueJobs()
        let again = try await effects(database)
        XCTAssertEqual(again, ["now"], "once")

        clock.advance(by: 60)
        let none = await worker.runDueJobs()
        XCTAssertNil(none, "nothing left")
        let all = try await effects(database)
        XCTAssertEqual(all, ["now", "later"])
        let left = try await pending(database)
        XCTAssertEqual(left, 0)
    }

    func testSchedulerWorkerWakesWhenTheClockIsMovedAndWhenAJobIsScheduled() async throws {
        let database = try open()
        let (scheduler, worker) = scheduler(database)
        let running = Task { try await worker.run() }
        defer { running.cancel() }
        _ = try await database.write { db in try scheduler.schedule(self.job("in-an-hour", inSeconds: 3_600), in: db) }
        try await Task.sleep(for: .milliseconds(100))
        let early = try await effects(database)
        XCTAssertEqual(early, [])
        clock.advance(by: 3_600)  // far less than the worker's 60 s poll: the move wakes it
        let ran = try await eventually(timeout: 10) { try await self.effects(database) == ["in-an-hour"] }
        XCTAssertTrue(ran, "moving the clock ran the job")

        _ = try await database.write { db in try scheduler.schedule(self.job("at-once", inSeconds: 0), in: db) }
        let woken = try await eventually(timeout: 10) { try await self.effects(database).count == 2 }
        XCTAssertTrue(woken, "scheduling a due job woke the worker")
    }

    func testSchedulingTwiceIsHarmlessAndJobsAreMovedAndCancelledBySubject() async throws {
        let database = try open()
        let (scheduler, worker) = scheduler(database)
        let added = try await database.write { db in
            [
                try scheduler.schedule(self.job("reminder:r1", inSeconds: 10, subject: "r1"), in: db),
                try scheduler.schedule(self.job("reminder:r1", inSeconds: 99, subject: "r1"), in: db),
                try scheduler.schedule(self.job("expiry:r1", inSeconds: 20, subject: "r1"), in: db),
                try scheduler.schedule(self.job("reminder:r2", inSeconds: 10, subject: "r2"), in: db),
            ]
        }
        XCTAssertEqual(added, [true, false, true, true], "the same id twice is one job")
        let moved = try await database.write { db in
            (
                try scheduler.move(id: "reminder:r2", to: self.clock.nowMilliseconds + 500_000, in: db),
                try scheduler.move(id: "missing", to: 0, in: db)
            )
        }
        XCTAssertEqual(moved.0, true)
        XCTAssertEqual(moved.1, false)
        let jobs = try await database.read { db in try scheduler.jobs(subject: "r1", in: db).map(\.id) }
        XCTAssertEqual(jobs, ["reminder:r1", "expiry:r1"])
        let cancelled = try await database.write { db in try scheduler.cancel(subject: "r1", in: db) }
        XCTAssertEqual(cancelled, 2)
        clock.advance(by: 100)
        _ = await worker.runDueJobs()
        let ran = try await effects(database)
        XCTAssertEqual(ran, [], "r1's were cancelled, r2's moved past the clock")
        clock.advance(by: 500)
        _ = await worker.runDueJobs()
        let later = try await effects(database)
        XCTAssertEqual(later, ["reminder:r2"])
    }

    /// A job scheduled by a transaction that rolls back never existed.
    func testAJobIsScheduledOnlyIfItsTransactionCommits() async throws {
        let database = try open()
        let (scheduler, _) = scheduler(database)
        struct Abort: Error {}
        do {
            try await database.write { db in
                try scheduler.schedule(self.job("doomed", inSeconds: 0), in: db)
                throw Abort()
            }
        } catch is Abort {}
        let left = try await pending(database)
        XCTAssertEqual(left, 0)
    }

    func testSchedulerRetriesAFailedJobWithItsEffectsRolledBack() async throws {
        let database = try open()
        let scheduler = Scheduler(clock: clock)
        scheduler.handle("flaky") { job, db in
            try db.execute(
                sql: "INSERT INTO effect (job_id, attempt) VALUES (?, ?)", arguments: [job.id, job.attempts])
            struct NotYet: Error {}
            if job.attempts < 2 { throw NotYet() }
        }
        let worker = SchedulerWorker(database: database, scheduler: scheduler, logger: Logger(label: "test"))
        try await database.write { db in _ = try scheduler.schedule(self.job("f", inSeconds: 0, kind: "flaky"), in: db)
        }
        let next = await worker.runDueJobs()
        XCTAssertEqual(next, clock.nowMilliseconds + 1_000, "retried after 1 s")
        clock.advance(by: 1)
        let next2 = await worker.runDueJobs()
        XCTAssertEqual(next2, clock.nowMilliseconds + 2_000, "then 2 s")
        let none = try await effects(database)
        XCTAssertEqual(none, [], "a failed run's effects are rolled back with it")
        clock.advance(by: 2)
        _ = await worker.runDueJobs()
        let attempts = try await database.read { db in try Int.fetchAll(db, sql: "SELECT attempt FROM effect") }
        XCTAssertEqual(attempts, [2], "the third run committed, once")
        XCTAssertEqual(SchedulerWorker.retryDelay(afterAttempts: 30), 3_600_000, "at most an hour")
    }

    /// A kind nobody handles (a version rolled back) waits, retried, and runs once a handler exists.
    func testAJobOfAKindNobodyHandlesWaits() async throws {
        let database = try open()
        let (scheduler, worker) = scheduler(database)
        _ = try await database.write { db in try scheduler.schedule(self.job("x", inSeconds: 0, kind: "future"), in: db)
        }
        _ = await worker.runDueJobs()
        let left = try await pending(database)
        XCTAssertEqual(left, 1)
        scheduler.handle("future") { job, db in
            try db.execute(sql: "INSERT INTO effect (job_id, attempt) VALUES (?, ?)", arguments: [job.id, 0])
        }
        clock.advance(by: 1)
        _ = await worker.runDueJobs()
        let ran = try await effects(database)
        XCTAssertEqual(ran, ["x"])
    }

    func testSchedulerRunsAJobThatBecameDueWhileTheServiceWasDown() async throws {
        var database = try open()
        let (before, _) = scheduler(database)
        _ = try await database.write { db in try before.schedule(self.job("overdue", inSeconds: 30), in: db) }
        try database.close()
        clock.advance(by: 3_600)  // the service was down for an hour

        database = try open()
        let (_, worker) = scheduler(database)
        _ = await worker.runDueJobs()
        let ran = try await effects(database)
        XCTAssertEqual(ran, ["overdue"])
        try database.close()
    }

    /// Two processes on one SQLite file (two pools here): each due job is claimed by one `DELETE …
    /// RETURNING` in the transaction that runs it, so no job runs twice and none is lost.
    func testTwoSchedulerWorkersOnOneDatabaseFileNeverRunAJobTwice() async throws {
        let first = try open()
        let second = try open()
        let (scheduler, worker1) = scheduler(first)
        let (_, worker2) = self.scheduler(second)
        let ids = (0..<300).map { "job-\($0)" }
        try await first.write { db in
            for id in ids { try scheduler.schedule(self.job(id, inSeconds: 0), in: db) }
        }
        await withTaskGroup(of: Void.self) { group in
            for worker in [worker1, worker2] { group.addTask { _ = await worker.runDueJobs() } }
        }
        let ran = try await effects(first)
        XCTAssertEqual(ran.count, ids.count, "each job ran exactly once")
        XCTAssertEqual(Set(ran), Set(ids))
        let left = try await pending(first)
        XCTAssertEqual(left, 0)
    }
}
