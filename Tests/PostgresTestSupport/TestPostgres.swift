import Foundation
import Logging
import PostgresNIO
import RPCTestSupport
import ServiceRuntime
import XCTest

/// The PostgreSQL the engine's tests use: the one `scripts/test.sh` started and named in
/// `YEDI_TEST_POSTGRES_URL` / `YEDI_TEST_POSTGRES_PASSWORD_FILE` (shared by `swift test --parallel`
/// workers), else one this process starts with `deploy/postgres-dev.sh --test` (a test run alone).
/// Each test gets a fresh database of its own, owned by the `yedi_test` role and dropped afterwards.
///
/// Unavailable: in CI (`CI=true`) the test fails, saying why, so a missing PostgreSQL never passes
/// silently; elsewhere it is skipped with the same reason.
public enum TestPostgres {
    public struct Server: Sendable {
        public var url: String
        public var passwordFile: String
    }

    private static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Found or started once per process.
    public static let server: Result<Server, TestPostgresUnavailable> = locate()

    private static func locate() -> Result<Server, TestPostgresUnavailable> {
        let environment = ProcessInfo.processInfo.environment
        if let url = environment["YEDI_TEST_POSTGRES_URL"], let file = environment["YEDI_TEST_POSTGRES_PASSWORD_FILE"] {
            return .success(Server(url: url, passwordFile: file))
        }
        let exports: [String: String]
        switch runScript(["--test", "--env"]) {
        case .success(let printed): exports = printed
        case .failure(let failure): return .failure(failure)
        }
        let script = repository.appendingPathComponent("deploy/postgres-dev.sh").path
        guard let url = exports["YEDI_TEST_POSTGRES_URL"], let file = exports["YEDI_TEST_POSTGRES_PASSWORD_FILE"] else {
            return .failure(TestPostgresUnavailable(reason: "\(script) --env printed no YEDI_TEST_POSTGRES_URL"))
        }
        return .success(Server(url: url, passwordFile: file))
    }

    /// Runs deploy/postgres-dev.sh with `arguments` (which include `--env`) and answers the variables
    /// its `export NAME='value'` lines set.
    private static func runScript(_ arguments: [String]) -> Result<[String: String], TestPostgresUnavailable> {
        let script = repository.appendingPathComponent("deploy/postgres-dev.sh").path
        // RunningProcess (posix_spawn and waitpid): Foundation's Process never saw the script end when this
        // ran inside an async test (the child stayed a zombie, waitUntilExit never returned).
        let result: ProcessResult
        do {
            result = try RunningProcess("/bin/bash", [script] + arguments).finish(timeout: 180)
        } catch {
            return .failure(TestPostgresUnavailable(reason: "cannot run \(script): \(error)"))
        }
        guard !result.timedOut, result.exitCode == 0 else {
            return .failure(
                TestPostgresUnavailable(
                    reason: "\(script) \(arguments.joined(separator: " ")) failed (\(result.exitCode)"
                        + (result.timedOut ? ", timed out" : "") + "): "
                        + result.errorOutput.split(separator: "\n").suffix(3).joined(separator: " / ")))
        }
        let printed = result.output
        var exports: [String: String] = [:]
        for line in printed.split(separator: "\n") {
            // export NAME='value'
            guard line.hasPrefix("export "), let equals = line.firstIndex(of: "=") else { continue }
            let name = String(line[line.index(line.startIndex, offsetBy: 7)..<equals])
            exports[name] = String(line[line.index(after: equals)...]).trimmingCharacters(in: ["'"])
        }
        return .success(exports)
    }

    /// A PostgreSQL cluster of the caller's own that also listens on 127.0.0.1 with TLS only, with the
    /// given certificate and key (`deploy/postgres-dev.sh --tls`), for the tests of TLS to PostgreSQL:
    /// the shared test server is socket only. `stop()` ends it and removes its folder.
    public struct TLSCluster: Sendable {
        public let port: Int
        /// The `yedi_test` role's password file.
        public let passwordFile: String
        let folder: String

        public func stop() {
            _ = TestPostgres.runScript(["--stop", "--dir", folder])
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    public static func startTLSCluster(certificate: String, key: String) throws -> TLSCluster {
        var reasons: [String] = []
        // A port that happens to be taken fails the start: another one is tried.
        for _ in 0..<5 {
            let port = Int.random(in: 40_000...59_999)
            let folder = "/tmp/yedi-pgtls-" + UUID().uuidString.prefix(8).lowercased()
            switch runScript(["--test", "--env", "--dir", folder, "--port", "\(port)", "--tls", certificate, key]) {
            case .success(let exports):
                guard let file = exports["YEDI_TEST_POSTGRES_PASSWORD_FILE"] else {
                    throw TestPostgresUnavailable(reason: "postgres-dev.sh --tls printed no password file")
                }
                return TLSCluster(port: port, passwordFile: file, folder: folder)
            case .failure(let failure):
                reasons.append(failure.reason)
                _ = runScript(["--stop", "--dir", folder])
                try? FileManager.default.removeItem(atPath: folder)
            }
        }
        throw TestPostgresUnavailable(reason: reasons.joined(separator: "; "))
    }

    /// The server, or the test fails (CI) or is skipped (elsewhere), saying why.
    public static func require() throws -> Server {
        switch server {
        case .success(let server):
            return server
        case .failure(let unavailable):
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                XCTFail("PostgreSQL is required in CI and is not available: \(unavailable.reason)")
                throw unavailable
            }
            throw XCTSkip("no PostgreSQL for the engine's tests: \(unavailable.reason)")
        }
    }

    /// The test role's settings, as a service would read them from its options.
    public static func settings(database: String? = nil, timeout: Duration = .seconds(5)) throws -> PostgresSettings {
        let server = try require()
        let options = try ServiceOptions.parse([
            "--database", server.url, "--database-password-file", server.passwordFile,
        ])
        let configuration = try ServiceConfiguration.resolve(
            options: options, environment: [:], defaults: ServiceDefaults(name: "test", port: 0, metricsPort: 0))
        guard case .postgres(var settings) = configuration.database else {
            throw TestPostgresUnavailable(reason: "\(server.url) is not a PostgreSQL URL")
        }
        if let database { settings.database = database }
        settings.timeout = timeout
        settings.connectTimeout = .seconds(5)
        return settings
    }

    /// A new empty database for one test; `drop` removes it (and ends its connections).
    public static func makeDatabase(timeout: Duration = .seconds(5)) async throws -> PostgresSettings {
        let name = "yedi_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try await administer("CREATE DATABASE \(name)")
        return try settings(database: name, timeout: timeout)
    }

    /// `WITH (FORCE)` ends the test's own connections, but the non-superuser test role may not signal a
    /// backend whose role is not (yet) its own: seen once under `swift test --parallel` as "must be a
    /// member of the role whose process is being terminated" (a connection still starting up as the
    /// pool closed). Such a backend is gone within moments, so the drop is tried again.
    public static func drop(_ settings: PostgresSettings) async throws {
        var attempt = 0
        while true {
            do {
                return try await administer("DROP DATABASE IF EXISTS \(settings.database) WITH (FORCE)")
            } catch  where attempt < 10 {
                attempt += 1
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// One statement outside any transaction (CREATE/DROP DATABASE), on the `postgres` database.
    public static func administer(_ sql: String) async throws {
        let connection = try await PostgresConnection.connect(
            configuration: ServicePostgres.connectionConfiguration(try settings()), id: 1, logger: logger)
        do {
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }

    public static let logger = Logger(label: "yedi.test.postgres")
}

public struct TestPostgresUnavailable: Error, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}

/// A running `ServicePostgres` on a fresh database, for one test.
public final class TestDatabase: Sendable {
    public let settings: PostgresSettings
    public let postgres: ServicePostgres
    private let runner: Task<Void, Never>

    public init(
        timeout: Duration = .seconds(5), poolSize: Int = 4,
        retryPause: @escaping @Sendable (Int) -> Duration = {
            _ in .milliseconds(1)
        }
    ) async throws {
        var settings = try await TestPostgres.makeDatabase(timeout: timeout)
        settings.poolSize = poolSize
        self.settings = settings
        let postgres = try ServicePostgres(settings: settings, logger: TestPostgres.logger, retryPause: retryPause)
        self.postgres = postgres
        runner = Task { await postgres.run() }
    }

    /// Runs `body` with a second pool on this database, as another replica of the service has its own,
    /// and ends that pool afterwards.
    public func withSecondPool<T>(_ body: (ServicePostgres) async throws -> T) async throws -> T {
        let postgres = try ServicePostgres(
            settings: settings, logger: TestPostgres.logger, retryPause: { _ in .milliseconds(1) })
        let runner = Task { await postgres.run() }
        do {
            let value = try await body(postgres)
            runner.cancel()
            await runner.value
            return value
        } catch {
            runner.cancel()
            await runner.value
            throw error
        }
    }

    /// Stops the pool and drops the database.
    public func close() async throws {
        runner.cancel()
        await runner.value
        try await TestPostgres.drop(settings)
    }
}

extension TestDatabase {
    /// A fresh database migrated with `migrations` (a service's list: `RuntimePostgresSchema.migrations`
    /// first, then the store's), for a store's contract tests.
    public convenience init(service: String, migrations: [PostgresMigration], poolSize: Int = 4) async throws {
        try await self.init(poolSize: poolSize)
        do {
            try await PostgresMigrator.migrate(postgres, service: service, migrations: migrations)
        } catch {
            try? await close()
            throw error
        }
    }
}
