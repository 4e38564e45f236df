import Foundation
import Logging
import PostgresNIO
import RPCCore
import YediSync

/// A service's PostgreSQL database (docs/postgres.md): the counterpart of `ServiceDatabase` when several
/// replicas share one database. One `PostgresClient` (its pool of `--database-pool-size` connections)
/// per process; `run()` is its background work, first in the service group and stopped last.
///
/// Every call is bounded by `--database-timeout`: waiting for a connection and the answer together. A
/// call past it answers `UNAVAILABLE` at once, without awaiting the stuck work (see `DeadlineRace`).
/// Serialization failures and deadlocks re-run the whole transaction up to 3 times after a jittered
/// pause, then answer `UNAVAILABLE`. Constraint violations surface as `PostgresConstraintViolation`, by
/// constraint name. Only stores (their `Store/` folders), service definitions and the runtime's storage
/// see PostgresNIO's types.
public final class ServicePostgres: Sendable {
    public let settings: PostgresSettings
    let client: PostgresClient
    let logger: Logger
    /// The pause before re-run `n` (1...3) of a transaction that hit a serialization failure or deadlock.
    let retryPause: @Sendable (Int) -> Duration
    /// What keeps this replica from serving although the database answers (a lost notification
    /// listener), by component; `PostgresHealthWatch` reports NOT_SERVING while any is set.
    private let troubles = TSanVisibleMutex<[String: String]>([:])
    /// Live streams' reads of their events (woken all at once when the listener reconnects) take at most
    /// half the pool, the rest stays for calls.
    public let streamReads: StreamReadLimit

    /// Re-runs after the first try, for 40001 and 40P01.
    public static let retries = 3

    /// Reads the password file and makes the pool; nothing connects until `run()` and the first call.
    public init(
        settings: PostgresSettings,
        logger: Logger,
        retryPause: @escaping @Sendable (Int) -> Duration = ServicePostgres.jitteredPause
    ) throws {
        self.settings = settings
        self.logger = logger
        self.retryPause = retryPause
        streamReads = StreamReadLimit(permits: max(1, settings.poolSize / 2))
        var configuration = try Self.clientConfiguration(settings)
        configuration.options.maximumConnections = settings.poolSize
        configuration.options.minimumConnections = 0
        configuration.options.connectTimeout = min(settings.timeout, .seconds(10))
        // The server ends a statement that outlives the call's deadline too: the deadline answers the
        // caller without awaiting the work, and without this the abandoned statement would keep running
        // (and holding its locks) on the server until it finished by itself.
        configuration.options.additionalStartupParameters = [
            ("statement_timeout", "\(settings.timeout.wholeMilliseconds)")
        ]
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
    }

    /// Sets (or, with nil, clears) `component`'s reason for this replica not to take traffic.
    public func reportTrouble(_ component: String, _ reason: String?) {
        troubles.withLock { $0[component] = reason }
    }

    /// The reasons set by `reportTrouble`, joined; nil when there are none.
    public var trouble: String? {
        troubles.withLock {
            $0.isEmpty ? nil : $0.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; ")
        }
    }

    /// 10 to 50 ms times the re-run's number, at random, so that two transactions that collided do not
    /// collide again in step.
    public static func jitteredPause(_ retry: Int) -> Duration {
        .milliseconds(Int64(retry) * Int64.random(in: 10...50))
    }

    /// The pool's background work; returns when its task is cancelled (which closes every connection).
    public func run() async {
        await client.run()
    }

    // MARK: Calls

    /// Runs `body` in one READ COMMITTED transaction: all of it commits before this returns, or none of
    /// it. `body` may run more than once (see `PostgresTransaction`); its after-commit hooks run once,
    /// after the commit that counted.
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (PostgresTransaction) async throws -> T) async throws
        -> T
    {
        try await transaction(begin: "BEGIN", timeout: settings.timeout, body)
    }

    /// `write` with a deadline of its own (migrations at start).
    @discardableResult
    func write<T: Sendable>(
        timeout: Duration,
        _ body: @escaping @Sendable (PostgresTransaction) async throws -> T
    ) async throws -> T {
        try await transaction(begin: "BEGIN", timeout: timeout, body)
    }

    /// Runs `body` in a read-only REPEATABLE READ transaction: every statement sees one snapshot (what a
    /// SQLite WAL reader gave for free).
    @discardableResult
    public func snapshot<T: Sendable>(_ body: @escaping @Sendable (PostgresTransaction) async throws -> T)
        async throws -> T
    {
        try await transaction(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", timeout: settings.timeout, body)
    }

    /// Runs `body` on a connection outside any transaction: each statement is its own snapshot.
    @discardableResult
    public func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T
    {
        let timeout = settings.timeout
        return try await DeadlineRace<T>.run(
            timeout: timeout,
            expired: { PostgresFailure.notApplied("no answer within \(Self.seconds(timeout))") },
            work: { [client, settings] in
                var stale = 0
                while true {
                    do {
                        return try await client.withConnection { connection in try await body(connection) }
                    } catch  where PostgresFailure.isClosedConnection(error) && stale < settings.poolSize {
                        // A pooled connection whose backend went away (a restart, pg_terminate_backend) fails
                        // its next statement before the pool notices; a read may simply go again.
                        stale += 1
                    } catch {
                        throw Self.translate(error, duringCommit: false)
                    }
                }
            })
    }

    private func transaction<T: Sendable>(
        begin: PostgresQuery,
        timeout: Duration,
        _ body: @escaping @Sendable (PostgresTransaction) async throws -> T
    ) async throws -> T {
        let phase = CommitPhase()
        return try await DeadlineRace<T>.run(
            timeout: timeout,
            expired: {
                let why = "no answer within \(Self.seconds(timeout))"
                return phase.expire() ? PostgresFailure.outcomeUnknown(why) : PostgresFailure.notApplied(why)
            },
            work: { [self] in
                var retry = 0
                var stale = 0
                while true {
                    do {
                        return try await attempt(begin: begin, phase: phase, body)
                    } catch let failure as StaleConnection where stale < settings.poolSize {
                        // BEGIN failed on a connection whose backend had gone: nothing ran; go again.
                        _ = failure
                        stale += 1
                    } catch let failure as StaleConnection {
                        throw Self.translate(failure.underlying, duringCommit: false)
                    } catch  where PostgresFailure.isRetryable(error) {
                        guard retry < Self.retries else {
                            throw RPCError(
                                code: .unavailable,
                                message: "the database refused the transaction \(Self.retries + 1) times "
                                    + "(\(PostgresFailure.reason(error)), concurrent changes); nothing was applied: "
                                    + "try again")
                        }
                        logger.debug(
                            "transaction re-run", metadata: ["sqlstate": "\(PostgresFailure.reason(error))"])
                        retry += 1
                        try await Task.sleep(for: retryPause(retry))
                    }
                }
            })
    }

    /// One run of the transaction on one pooled connection.
    private func attempt<T: Sendable>(
        begin: PostgresQuery,
        phase: CommitPhase,
        _ body: @escaping @Sendable (PostgresTransaction) async throws -> T
    ) async throws -> T {
        let logger = logger
        do {
            return try await client.withConnection { connection in
                let transaction = PostgresTransaction(connection: connection, logger: logger)
                do {
                    try await connection.query(begin, logger: logger)
                } catch  where PostgresFailure.isClosedConnection(error) {
                    throw StaleConnection(underlying: error)
                }
                let value: T
                do {
                    value = try await body(transaction)
                } catch {
                    if PostgresFailure.isUnavailable(error) {
                        // Never another statement on a connection that broke mid-transaction: with
                        // postgres-nio 1.33.2 it may never complete and hold its pool slot. Closing it
                        // drops it from the pool; the server rolls back what it had.
                        try? await connection.close()
                    } else {
                        _ = try? await connection.query("ROLLBACK", logger: logger)
                    }
                    throw error
                }
                guard phase.beginCommit() else {
                    // The caller was already told "nothing was applied": make it true.
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw CancellationError()
                }
                do {
                    try await connection.query("COMMIT", logger: logger)
                } catch {
                    phase.commitFailed(retryable: PostgresFailure.isRetryable(error))
                    throw CommitFailure(underlying: error)
                }
                transaction.runHooks()
                return value
            }
        } catch let failure as StaleConnection {
            throw failure
        } catch let failure as CommitFailure {
            throw Self.translate(failure.underlying, duringCommit: true)
        } catch {
            throw Self.translate(error, duringCommit: false)
        }
    }

    /// BEGIN failed because the pooled connection was already closed: nothing of the body ran.
    private struct StaleConnection: Error {
        var underlying: any Error
    }

    /// A COMMIT that failed: whether it counted is unknown when the connection broke.
    private struct CommitFailure: Error {
        var underlying: any Error
    }

    /// What the caller sees of a failure: retryable errors as they are (the loop re-runs them),
    /// constraint violations by name, a lost database as `UNAVAILABLE`, the store's own errors unchanged.
    static func translate(_ error: any Error, duringCommit: Bool) -> any Error {
        if PostgresFailure.isRetryable(error) { return error }
        if let violation = PostgresFailure.constraintViolation(error) { return violation }
        if PostgresFailure.isUnavailable(error) {
            let why = PostgresFailure.reason(error)
            return duringCommit ? PostgresFailure.outcomeUnknown(why) : PostgresFailure.notApplied(why)
        }
        return error
    }

    static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1_000 == 0 ? "\(milliseconds / 1_000) s" : "\(milliseconds) ms"
    }

    // MARK: Configuration

    static func clientConfiguration(_ settings: PostgresSettings) throws -> PostgresClient.Configuration {
        let password = try settings.readPassword()
        switch settings.address {
        case .unixSocket:
            return PostgresClient.Configuration(
                unixSocketPath: settings.address.socketPath!, username: settings.role, password: password,
                database: settings.database)
        case .tcp(let host, let port):
            var configuration = PostgresClient.Configuration(
                host: host, port: port, username: settings.role, password: password, database: settings.database,
                tls: .disable)
            if settings.tls == .verifyFull {
                configuration.tls = .require(try tlsConfiguration(settings))
                configuration.options.tlsServerName = host
            }
            return configuration
        }
    }

    /// Full verification: the chain against `--database-ca` (or the system's roots) and the host name.
    static func tlsConfiguration(_ settings: PostgresSettings) throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .fullVerification
        if let caFile = settings.caFile {
            tls.trustRoots = .file(caFile)
        }
        return tls
    }
}

/// How far a transaction got, shared by its runs and its deadline: once the deadline has answered "not
/// applied", no run may commit; once a COMMIT is sent, the deadline can only say "unknown".
final class CommitPhase: Sendable {
    private enum Phase {
        case running
        case committing
        case abandoned
    }

    private let phase = TSanVisibleMutex<Phase>(.running)

    /// Before sending COMMIT: false if the caller was already answered.
    func beginCommit() -> Bool {
        phase.withLock { phase in
            guard case .running = phase else { return false }
            phase = .committing
            return true
        }
    }

    /// A COMMIT refused with a serialization failure committed nothing: a re-run may commit. Any other
    /// failure leaves the outcome unknown.
    func commitFailed(retryable: Bool) {
        guard retryable else { return }
        phase.withLock { phase in
            if case .committing = phase { phase = .running }
        }
    }

    /// The deadline passed: true if a COMMIT may be in flight (the outcome is unknown).
    func expire() -> Bool {
        phase.withLock { phase in
            if case .committing = phase { return true }
            phase = .abandoned
            return false
        }
    }
}
