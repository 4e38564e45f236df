import Foundation
import PostgresNIO
import PostgresTestSupport
import RPCCore
import XCTest
import YediSync

@testable import ServiceRuntime

/// `ServicePostgres` against a real PostgreSQL (docs/postgres.md): commits and rollbacks, after-commit
/// hooks, re-runs of serialization failures and deadlocks, constraint violations by name, the deadline
/// (answered without awaiting stuck work), a backend terminated mid-transaction, and start-up failures.
final class ServicePostgresTests: XCTestCase {
    private var database: TestDatabase!

    override func setUp() async throws {
        database = try await TestDatabase(timeout: .milliseconds(1_500))
        try await database.postgres.write { tx in
            try await tx.query(
                "CREATE TABLE thing (id bigint PRIMARY KEY, name text NOT NULL CONSTRAINT thing_name_unique UNIQUE)")
        }
    }

    override func tearDown() async throws {
        try await database?.close()
        database = nil
    }

    private var postgres: ServicePostgres { database.postgres }

    private func names() async throws -> [String] {
        try await postgres.read { connection in
            var names: [String] = []
            for try await name in try await connection.query(
                "SELECT name FROM thing ORDER BY id", logger: TestPostgres.logger
            )
            .decode(String.self) {
                names.append(name)
            }
            return names
        }
    }

    func testAWriteCommitsAndItsHookRunsOnceAfterTheCommit() async throws {
        let hooks = Counter()
        let value = try await postgres.write { tx in
            try await tx.query("INSERT INTO thing VALUES (1, 'one')")
            tx.afterCommit { hooks.add() }
            return 7
        }
        XCTAssertEqual(value, 7)
        XCTAssertEqual(hooks.value, 1)
        let read = try await names()
        XCTAssertEqual(read, ["one"])
    }

    func testAFailingBodyRollsBackAndRunsNoHook() async throws {
        let hooks = Counter()
        do {
            try await postgres.write { tx in
                try await tx.query("INSERT INTO thing VALUES (1, 'one')")
                tx.afterCommit { hooks.add() }
                throw RPCError(code: .failedPrecondition, message: "the store changed its mind")
            }
            XCTFail("the body's error was swallowed")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .failedPrecondition, "the store's own error reaches the caller unchanged")
        }
        XCTAssertEqual(hooks.value, 0)
        let read = try await names()
        XCTAssertEqual(read, [])
    }

    func testAConstraintViolationIsToldByItsName() async throws {
        try await postgres.write { tx in try await tx.query("INSERT INTO thing VALUES (1, 'one')") }
        do {
            try await postgres.write { tx in try await tx.query("INSERT INTO thing VALUES (2, 'one')") }
            XCTFail("a duplicate name was stored")
        } catch let violation as PostgresConstraintViolation {
            XCTAssertEqual(violation.constraint, "thing_name_unique")
            XCTAssertEqual(violation.sqlState, "23505")
            XCTAssertEqual(violation.table, "thing")
            XCTAssertTrue(violation.isUniqueViolation)
        }
        do {
            try await postgres.write { tx in try await tx.query("INSERT INTO thing VALUES (1, 'another')") }
            XCTFail("a duplicate id was stored")
        } catch let violation as PostgresConstraintViolation {
            XCTAssertEqual(violation.constraint, "thing_pkey")
        }
    }

    /// A serialization failure (40001) or deadlock (40P01) re-runs the whole transaction; the hooks of
    /// the failed runs never run.
    func testSerializationFailuresAndDeadlocksAreReRun() async throws {
        for state in ["40001", "40P01"] {
            let runs = Counter()
            let hooks = Counter()
            let value = try await postgres.write { tx in
                let run = runs.add()
                try await tx.query("INSERT INTO thing VALUES (\(run), \("run \(run) " + state))")
                tx.afterCommit { hooks.add() }
                if run < 3 {
                    try await tx.query(
                        PostgresQuery(
                            unsafeSQL: "DO $$ BEGIN RAISE EXCEPTION 'collided' USING ERRCODE = '\(state)'; END $$"))
                }
                return run
            }
            XCTAssertEqual(value, 3, state)
            XCTAssertEqual(hooks.value, 1, "only the committed run's hook: \(state)")
            let read = try await names()
            XCTAssertEqual(read, ["run 3 " + state], "the failed runs left nothing")
            try await postgres.write { tx in try await tx.query("DELETE FROM thing") }
        }
    }

    func testAfterThreeReRunsTheCallerGetsUnavailable() async throws {
        let runs = Counter()
        do {
            try await postgres.write { tx in
                runs.add()
                try await tx.query("DO $$ BEGIN RAISE EXCEPTION 'collided' USING ERRCODE = '40001'; END $$")
            }
            XCTFail("an endless serialization failure succeeded")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unavailable)
            XCTAssertTrue(error.message.contains("nothing was applied"), error.message)
        }
        XCTAssertEqual(runs.value, 1 + ServicePostgres.retries)
    }

    /// A call past `--database-timeout` answers UNAVAILABLE at once, and the abandoned transaction never
    /// commits afterwards (the caller was told "nothing was applied").
    func testTheDeadlineAnswersAndTheAbandonedTransactionNeverCommits() async throws {
        let clock = ContinuousClock()
        let started = clock.now
        do {
            try await postgres.write { tx in
                try await tx.query("INSERT INTO thing VALUES (1, 'late')")
                try await tx.query("SELECT pg_sleep(3)")
            }
            XCTFail("a 3 s statement finished within a 1.5 s deadline")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unavailable)
            XCTAssertTrue(error.message.contains("no answer within 1500 ms"), error.message)
            XCTAssertTrue(error.message.contains("nothing was applied"), error.message)
        }
        let waited = clock.now - started
        XCTAssertLessThan(waited, .milliseconds(2_500), "the caller waited for the stuck statement")
        try await Task.sleep(for: .seconds(3))
        let read = try await names()
        XCTAssertEqual(read, [], "the abandoned transaction committed after its caller was answered")
    }

    /// A statement abandoned by the deadline does not go on running on the server: the session's
    /// `statement_timeout` (the same `--database-timeout`) ends it there, so it holds no locks and no
    /// backend after its caller was answered.
    func testTheServerEndsAStatementTheDeadlineAbandoned() async throws {
        let started = ContinuousClock.now
        do {
            try await postgres.write { tx in try await tx.query("SELECT pg_sleep(4), 'abandoned-by-deadline'") }
            XCTFail("a 4 s statement finished within a 1.5 s deadline")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unavailable)
        }
        // Well before the 4 s sleep would end by itself.
        try await Task.sleep(until: started + .milliseconds(2_500))
        let running = try await postgres.read { connection in
            var count = 0
            for try await n in try await connection.query(
                """
                SELECT count(*)::bigint FROM pg_stat_activity
                WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
                  AND query LIKE '%abandoned-by-deadline%'
                """, logger: TestPostgres.logger
            ).decode(Int64.self) {
                count = Int(n)
            }
            return count
        }
        XCTAssertEqual(running, 0, "the abandoned statement still runs on the server")
        let setting = try await postgres.read { connection in
            var value = ""
            for try await v in try await connection.query("SHOW statement_timeout", logger: TestPostgres.logger)
                .decode(String.self)
            {
                value = v
            }
            return value
        }
        XCTAssertEqual(setting, "1500ms")
    }

    /// A caller cancelled mid-transaction gets `CancellationError` at once, and the write never commits.
    func testACancelledCallerGetsCancellationAndTheWriteNeverCommits() async throws {
        let postgres = postgres
        let call = Task {
            try await postgres.write { tx in
                try await tx.query("INSERT INTO thing VALUES (1, 'cancelled')")
                try await tx.query("SELECT pg_sleep(1)")
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        call.cancel()
        do {
            try await call.value
            XCTFail("a cancelled write went on to succeed")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        try await Task.sleep(for: .milliseconds(1_500))
        let read = try await names()
        XCTAssertEqual(read, [], "the cancelled caller's transaction committed")
    }

    /// A transaction whose backend is terminated mid-way answers UNAVAILABLE within the deadline and
    /// leaves nothing; 20 of them in a row leave the pool serving at full size.
    func testTerminatedBackendsAnswerUnavailableAndThePoolRecovers() async throws {
        let clock = ContinuousClock()
        for round in 1...20 {
            let started = clock.now
            do {
                try await postgres.write { tx in
                    try await tx.query("INSERT INTO thing VALUES (\(round), \("round \(round)"))")
                    // Terminates this very backend (a role may signal its own sessions).
                    try await tx.query("SELECT pg_terminate_backend(pg_backend_pid())")
                    try await tx.query("INSERT INTO thing VALUES (\(round + 100), 'after')")
                }
                XCTFail("round \(round): a write on a terminated backend succeeded")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .unavailable, "round \(round): \(error)")
            }
            XCTAssertLessThan(clock.now - started, .milliseconds(2_500), "round \(round) waited past the deadline")
        }
        let read = try await names()
        XCTAssertEqual(read, [], "a terminated transaction left rows")
        // Full size: as many concurrent calls as the pool has connections, each holding one for 200 ms.
        let size = database.settings.poolSize
        let postgres = postgres
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<size {
                group.addTask { @Sendable () async throws -> Void in
                    _ = try await postgres.read { connection in
                        try await connection.query("SELECT pg_sleep(0.2)", logger: TestPostgres.logger).collect()
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    func testStartUpFailsAtOnceOnAWrongPasswordOrAMissingDatabase() async throws {
        var wrong = database.settings
        let folder = NSTemporaryDirectory() + "yedi-pg-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        wrong.passwordFile = folder + "/wrong"
        try "not-the-password".write(toFile: wrong.passwordFile, atomically: true, encoding: .utf8)
        wrong.connectTimeout = .seconds(30)
        let clock = ContinuousClock()
        var started = clock.now
        await assertStartupError(
            try await ServicePostgres(settings: wrong, logger: TestPostgres.logger).waitUntilReachable()
        ) {
            XCTAssertTrue($0.contains("password authentication failed"), $0)
            XCTAssertTrue($0.hasPrefix("PostgreSQL \(wrong.role)@"), $0)
        }
        XCTAssertLessThan(clock.now - started, .seconds(5), "a wrong password waited for the connect timeout")

        var missing = database.settings
        missing.database = "yedi_test_no_such_database"
        started = clock.now
        await assertStartupError(
            try await ServicePostgres(settings: missing, logger: TestPostgres.logger).waitUntilReachable()
        ) {
            XCTAssertTrue($0.contains("yedi_test_no_such_database"), $0)
            XCTAssertTrue($0.contains("3D000"), $0)
        }
        XCTAssertLessThan(clock.now - started, .seconds(5))
    }

    func testStartUpGivesUpAfterTheConnectTimeoutNamingTheAddress() async throws {
        var nowhere = database.settings
        nowhere.address = .unixSocket(folder: "/tmp/yedi-no-postgres-here", port: 5432)
        nowhere.connectTimeout = .seconds(1)
        let clock = ContinuousClock()
        let started = clock.now
        await assertStartupError(
            try await ServicePostgres(settings: nowhere, logger: TestPostgres.logger).waitUntilReachable()
        ) {
            XCTAssertTrue($0.contains("/tmp/yedi-no-postgres-here/.s.PGSQL.5432"), $0)
            XCTAssertTrue($0.contains("not reachable within 1 s"), $0)
        }
        let waited = clock.now - started
        XCTAssertGreaterThanOrEqual(waited, .seconds(1))
        XCTAssertLessThan(waited, .seconds(4))
    }
}

/// Fails unless `expression` throws a `StartupError`; hands its one line to `check`.
func assertStartupError(
    _ expression: @autoclosure () async throws -> Void,
    file: StaticString = #filePath,
    line: UInt = #line,
    _ check: (String) -> Void
) async {
    do {
        try await expression()
        XCTFail("no start-up error", file: file, line: line)
    } catch let error as StartupError {
        XCTAssertFalse(error.description.contains("\n"), "more than one line: \(error)", file: file, line: line)
        check(error.description)
    } catch {
        XCTFail("not a StartupError: \(error)", file: file, line: line)
    }
}

/// A count shared with `@Sendable` closures.
final class Counter: Sendable {
    private let count = TSanVisibleMutex(0)

    @discardableResult
    func add() -> Int {
        count.withLock { count in
            count += 1
            return count
        }
    }

    var value: Int { count.withLock { $0 } }
}
