import Foundation
import Logging
import PostgresNIO
import ServiceRuntime

/// A fresh database for one bench run on the development PostgreSQL (`deploy/postgres-dev.sh --test`,
/// started if needed), created by its test role and dropped at the end; the service processes get its
/// URL and the role's password file, and migrate it at their first start.
public struct BenchPostgres: Sendable {
    public static let logger = Logger(label: "bench.postgres")

    /// `postgresql://…/<the bench's database>?host=…`
    public let url: String
    public let passwordFile: String
    public let settings: PostgresSettings
    private let administration: PostgresSettings

    public static func create() async throws -> BenchPostgres {
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

    /// Runs `body` with a fresh database when `wanted` (dropped afterwards, also when `body` throws), with
    /// nil otherwise (the bench's SQLite run).
    public static func with(_ wanted: Bool, _ body: (BenchPostgres?) async throws -> Void) async throws {
        let database = wanted ? try await create() : nil
        do {
            try await body(database)
        } catch {
            await database?.drop()
            throw error
        }
        await database?.drop()
    }

    /// The options a service process gets for this database.
    public var arguments: [String] { ["--database", url, "--database-password-file", passwordFile] }

    /// `arguments` and a log key made in `folder` for every replica to share (page cursors signed by one
    /// replica are read by the others; a PostgreSQL start requires the key).
    public func replicaArguments(sharingKeysIn folder: URL) -> [String] {
        arguments + ["--log-key", Self.keyFile(named: "log.key", in: folder)]
    }

    /// The path of a random 32-byte key in `folder`, made on first use (mode 0600), for every replica to share.
    public static func keyFile(named name: String, in folder: URL) -> String {
        let path = folder.appendingPathComponent(name).path
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(
                atPath: path, contents: Data((0..<32).map { _ in UInt8.random(in: 0...255) }),
                attributes: [.posixPermissions: 0o600])
        }
        return path
    }

    /// The `"engine":…,` field every bench line carries.
    public static func engineField(postgres: Bool) -> String {
        #""engine":"\#(postgres ? "postgresql" : "sqlite")","#
    }

    public func connect() async throws -> PostgresConnection {
        try await PostgresConnection.connect(
            configuration: ServicePostgres.connectionConfiguration(settings), id: 1, logger: Self.logger)
    }

    public func drop() async {
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
