import Foundation
import GRDB
import NIOConcurrencyHelpers

/// Timed work kept in the service's own database: "at time T, run job J with payload P".
///
/// Jobs are written, moved and cancelled inside the caller's transaction, so they commit (or not) with
/// the change that needs them, as outbox jobs do. `SchedulerWorker` runs each due job **in one write
/// transaction that also deletes it** (claimed by a single `DELETE … RETURNING`): the handler's database
/// effects and the job's end commit together, so a job runs at most once, also with several processes
/// on one database, and a crash before the commit leaves it due. A handler that must reach outside (a
/// peer, a push) writes an outbox job in that same transaction; the outbox delivers it at least once.
///
/// Due times are on the injected `WallClock`: a job due while the service was down runs at start, and a
/// test (or a development process's `AdvanceClock`) that moves the clock runs what became due at once.
public final class Scheduler: Sendable {
    /// Runs one due job inside the transaction that deletes it; throwing rolls both back and the job is
    /// tried again later (`SchedulerWorker.retryDelay`).
    public typealias Handler = @Sendable (_ job: ScheduledJob, _ db: Database) throws -> Void
    /// The same on PostgreSQL (`handle(_:postgres:)`): runs inside the transaction that deletes the job.
    public typealias PostgresHandler = @Sendable (_ job: ScheduledJob, _ tx: PostgresTransaction) async throws -> Void

    let clock: any WallClock
    let wakeUp = WakeUpSignal()
    private let handlers = NIOLockedValueBox<[String: Handler]>([:])
    private let postgresHandlers = NIOLockedValueBox<[String: PostgresHandler]>([:])

    public init(clock: any WallClock) {
        self.clock = clock
        (clock as? any MovableClock)?.whenMoved { [wakeUp] in wakeUp.signal() }
    }

    /// Runs the jobs of `kind` with `handler` (a service registers its kinds at start; a due job of a
    /// kind nobody handles waits, retried with backoff and logged, e.g. after rolling a version back).
    public func handle(_ kind: String, _ handler: @escaping Handler) {
        handlers.withLockedValue { $0[kind] = handler }
    }

    func handler(for kind: String) -> Handler? {
        handlers.withLockedValue { $0[kind] }
    }

    /// Runs the jobs of `kind` with `handler` when the service's database is PostgreSQL.
    public func handle(_ kind: String, postgres handler: @escaping PostgresHandler) {
        postgresHandlers.withLockedValue { $0[kind] = handler }
    }

    func postgresHandler(for kind: String) -> PostgresHandler? {
        postgresHandlers.withLockedValue { $0[kind] }
    }

    /// Adds `job` to the transaction `db` belongs to, unless a job with its id is already scheduled (then
    /// that one stays as it is: use `move` to change a time). Returns whether it was added.
    @discardableResult
    public func schedule(_ job: ScheduledJob, in db: Database) throws -> Bool {
        try db.execute(
            sql: """
                INSERT INTO runtime_scheduled_job (id, kind, subject, payload, due_at_ms, attempts)
                VALUES (?, ?, ?, ?, ?, 0) ON CONFLICT(id) DO NOTHING
                """,
            arguments: [job.id, job.kind, job.subject, Data(job.payload), job.dueAtMilliseconds])
        let added = db.changesCount == 1
        if added { wakeAfterCommit(db) }
        return added
    }

    /// Moves a scheduled job to `dueAtMilliseconds` (its failed attempts forgotten); false when there is
    /// no such job (it ran, or was cancelled).
    @discardableResult
    public func move(id: String, to dueAtMilliseconds: Int64, in db: Database) throws -> Bool {
        try db.execute(
            sql: "UPDATE runtime_scheduled_job SET due_at_ms = ?, attempts = 0, last_error = NULL WHERE id = ?",
            arguments: [dueAtMilliseconds, id])
        let moved = db.changesCount == 1
        if moved { wakeAfterCommit(db) }
        return moved
    }

    /// Cancels one job; false when there was none.
    @discardableResult
    public func cancel(id: String, in db: Database) throws -> Bool {
        try db.execute(sql: "DELETE FROM runtime_scheduled_job WHERE id = ?", arguments: [id])
        return db.changesCount == 1
    }

    /// Cancels every job about `subject` (of `kind`, or of every kind): what a change to the subject
    /// (a cancelled reservation, a deleted account) does in its own transaction. Returns how many went.
    @discardableResult
    public func cancel(subject: String, kind: String? = nil, in db: Database) throws -> Int {
        if let kind {
            try db.execute(
                sql: "DELETE FROM runtime_scheduled_job WHERE subject = ? AND kind = ?", arguments: [subject, kind])
        } else {
            try db.execute(sql: "DELETE FROM runtime_scheduled_job WHERE subject = ?", arguments: [subject])
        }
        return db.changesCount
    }

    /// The scheduled jobs about `subject`, soonest first (what a handler or a test checks).
    public func jobs(subject: String, in db: Database) throws -> [ScheduledJob] {
        try Row.fetchAll(
            db, sql: "SELECT * FROM runtime_scheduled_job WHERE subject = ? ORDER BY due_at_ms, id",
            arguments: [subject]
        ).map(Self.job)
    }

    static func job(_ row: Row) -> ScheduledJob {
        ScheduledJob(
            id: row["id"], kind: row["kind"], subject: row["subject"],
            payload: [UInt8]((row["payload"] as Data?) ?? Data()), dueAtMilliseconds: row["due_at_ms"],
            attempts: row["attempts"])
    }

    private func wakeAfterCommit(_ db: Database) {
        let wakeUp = self.wakeUp
        db.afterNextTransaction { _ in wakeUp.signal() }
    }
}
