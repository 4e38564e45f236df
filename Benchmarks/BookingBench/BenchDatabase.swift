import BenchSupport
import Foundation
import GRDB
import Logging
import PostgresNIO
import ServiceRuntime

/// The rows the bench seeds, written once for both engines: statements with `?` placeholders and text or
/// integer values, applied in one transaction to the service's SQLite file or to its PostgreSQL database
/// (where each `?` becomes `$n`), after checking that the service migrated that database first.
struct SeedBatch {
    enum Value {
        case text(String)
        case integer(Int64)
    }

    private(set) var statements: [(sql: String, values: [Value])] = []

    mutating func add(_ sql: String, _ values: [Value]) { statements.append((sql, values)) }

    func apply(toSQLite path: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            guard
                try Bool.fetchOne(db, sql: "SELECT COUNT(*) > 0 FROM grdb_migrations WHERE identifier = 'booking-1'")
                    == true
            else { throw BenchError("the service's database has no booking-1 schema") }
            for (sql, values) in statements {
                try db.execute(
                    sql: sql,
                    arguments: StatementArguments(
                        values.map { value -> any DatabaseValueConvertible in
                            switch value {
                            case .text(let text): text
                            case .integer(let integer): integer
                            }
                        }))
            }
        }
    }

    func apply(to postgres: BenchPostgres) async throws {
        let connection = try await postgres.connect()
        do {
            let migrated = try await connection.query(
                "SELECT count(*) FROM runtime_schema_migrations WHERE name = 'booking-1'", logger: BenchPostgres.logger
            ).collect().first?.decode(Int64.self)
            guard migrated == 1 else { throw BenchError("the service's database has no booking-1 schema") }
            try await connection.query("BEGIN", logger: BenchPostgres.logger)
            for (sql, values) in statements {
                var bindings = PostgresBindings()
                var numbered = ""
                var next = 0
                for character in sql {
                    guard character == "?" else {
                        numbered.append(character)
                        continue
                    }
                    next += 1
                    numbered += "$\(next)"
                }
                for value in values {
                    switch value {
                    case .text(let text): bindings.append(text)
                    case .integer(let integer): bindings.append(integer)
                    }
                }
                try await connection.query(
                    PostgresQuery(unsafeSQL: numbered, binds: bindings), logger: BenchPostgres.logger)
            }
            try await connection.query("COMMIT", logger: BenchPostgres.logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}

/// A fresh database for one bench run on the development PostgreSQL (`deploy/postgres-dev.sh --test`,
/// started if needed), created by its test role and dropped at the end; the service processes get its
/// URL and the role's password file, and migrate it at their first start.
struct BenchPostgres {
    static let logger = Logger(label: "bench.postgres")

    /// `postgresql://…/<the bench's database>?host=…`
    let url: String
    let passwordFile: String
    let settings: PostgresSettings
    private let administration: PostgresSettings

    static func create() async throws -> BenchPostgres {
        let repository = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [repository.appendingPathComponent("deploy/postgres-dev.sh").path, "--test", "--env"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("deploy/postgres-dev.sh --test failed") }
        var exports: [String: String] = [:]
        for line in printed.split(separator: "\n") where line.hasPrefix("export ") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            exports[String(line[line.index(line.startIndex, offsetBy: 7)..<equals])] =
                String(line[line.index(after: equals)...]).trimmingCharacters(in: ["'"])
        }
        guard let adminURL = exports["YEDI_TEST_POSTGRES_URL"], let file = exports["YEDI_TEST_POSTGRES_PASSWORD_FILE"]
        else { throw BenchError("deploy/postgres-dev.sh printed no YEDI_TEST_POSTGRES_URL") }
        let name = "yedi_bench_" + UUID().uuidString.prefix(8).lowercased()
        guard let marker = adminURL.range(of: "/postgres?") else { throw BenchError("unexpected URL \(adminURL)") }
        let url = adminURL.replacingCharacters(in: marker, with: "/\(name)?")
        let administration = try settings(adminURL, passwordFile: file)
        try await run("CREATE DATABASE \(name)", administration)
        return BenchPostgres(
            url: url, passwordFile: file, settings: try settings(url, passwordFile: file),
            administration: administration)
    }

    /// The options a service process gets for this database.
    var arguments: [String] { ["--database", url, "--database-password-file", passwordFile] }

    func connect() async throws -> PostgresConnection {
        try await PostgresConnection.connect(
            configuration: ServicePostgres.connectionConfiguration(settings), id: 1, logger: Self.logger)
    }

    func drop() async {
        try? await Self.run("DROP DATABASE IF EXISTS \(settings.database) WITH (FORCE)", administration)
    }

    private static func settings(_ url: String, passwordFile: String) throws -> PostgresSettings {
        let configuration = try ServiceConfiguration.resolve(
            options: try ServiceOptions.parse(["--database", url, "--database-password-file", passwordFile]),
            environment: [:], defaults: ServiceDefaults(name: "bench", port: 0, metricsPort: 0))
        guard case .postgres(let settings) = configuration.database else {
            throw BenchError("\(url) is not PostgreSQL")
        }
        return settings
    }

    private static func run(_ sql: String, _ settings: PostgresSettings) async throws {
        let connection = try await PostgresConnection.connect(
            configuration: ServicePostgres.connectionConfiguration(settings), id: 1, logger: logger)
        do {
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}
