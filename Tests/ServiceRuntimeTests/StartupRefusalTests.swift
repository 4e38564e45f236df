import Foundation
import GRDB
import RPCCore
import RPCTestSupport
import ServiceTestSupport
import XCTest

@testable import ServiceRuntime

/// A service executable that cannot run says why in one line and exits non-zero, quickly, before it
/// creates or migrates anything: the deployment mistakes an operator makes most.
final class StartupRefusalTests: XCTestCase {
    private var pki: URL!
    private var scratch: URL!

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("yedi-startup-\(UUID().uuidString)")
        pki = scratch.appendingPathComponent("pki")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: try TestPKI.get().devPKI, to: pki)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Runs `service` (AccountService unless told) with `arguments` and expects a refusal whose critical
    /// line contains `expected`.
    private func assertRefuses(
        _ arguments: [String], mentioning expected: [String], service: String = "AccountService",
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let process = try RunningProcess(
            try BuiltProducts.path(service),
            ["--host", "127.0.0.1", "--pki", pki.path, "--log-level", "info"] + arguments)
        let result = process.finish(timeout: 20)
        XCTAssertFalse(result.timedOut, "still running: \(result.combinedOutput)", file: file, line: line)
        XCTAssertNotEqual(result.exitCode, 0, result.combinedOutput, file: file, line: line)
        let refusal = result.errorOutput.split(separator: "\n").first { $0.contains("cannot run:") } ?? ""
        for phrase in expected {
            XCTAssertTrue(
                refusal.contains(phrase), "\"\(phrase)\" not in: \(result.combinedOutput)", file: file, line: line)
        }
        XCTAssertFalse(
            result.errorOutput.contains("database ready"), "refused before opening the database", file: file, line: line
        )
    }

    private var freePorts: [String] { ["--port", "0", "--metrics-port", "0"] }

    func testAMissingCertificateIsNamed() throws {
        try FileManager.default.removeItem(at: pki.appendingPathComponent("account.pem"))
        try assertRefuses(
            freePorts + ["--data", scratch.appendingPathComponent("data").path],
            mentioning: ["TLS setup failed", "account.pem", "--cert"])
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: scratch.appendingPathComponent("data/account.sqlite").path),
            "nothing was created")
    }

    func testAKeyOfAnotherCertificateIsRefused() throws {
        let key = pki.appendingPathComponent("account.key")
        try FileManager.default.removeItem(at: key)
        try FileManager.default.copyItem(at: pki.appendingPathComponent("chat.key"), to: key)
        try assertRefuses(
            freePorts + ["--data", scratch.appendingPathComponent("data").path],
            mentioning: ["TLS setup failed", "does not match", "account.key"])
    }

    func testADataFolderThatCannotBeWrittenIsRefused() throws {
        // Under a regular file: not even root can create it (the tests may run as root, which ignores modes).
        let blocker = scratch.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: blocker)
        let data = blocker.appendingPathComponent("data").path
        try assertRefuses(
            freePorts + ["--data", data],
            mentioning: ["data folder \(data) cannot be used", "Not a directory", "--data"])
    }

    func testAPortInUseIsNamed() async throws {
        let holder = try await RunningServer.start(pki: try TestPKI.get(), services: [])
        let port = holder.port
        let refused = Result {
            try assertRefuses(
                ["--port", "\(port)", "--metrics-port", "0", "--data", scratch.appendingPathComponent("data").path],
                mentioning: ["RPC port 127.0.0.1:\(port) is already in use", "--port"])
        }
        await holder.stop()
        try refused.get()
    }

    /// A service without a PostgreSQL store (every service has one now; this guards the next) says so
    /// instead of quietly opening its SQLite file: checked before anything is made.
    func testAServiceThatRunsOnSQLiteOnlyRefusesAPostgreSQLDatabase() throws {
        var options = try ServiceOptions.parse([])
        options.pki = pki.path
        options.database = "postgresql://chat@127.0.0.1:5432/chat"
        let password = scratch.appendingPathComponent("db-password")
        try Data("secret".utf8).write(to: password)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: password.path)
        options.databasePasswordFile = password.path
        let configuration = try ServiceConfiguration.resolve(
            options: options, environment: [:], defaults: SQLiteOnlyDefinition.defaults)
        XCTAssertThrowsError(try OpenedEngine.check(SQLiteOnlyDefinition.self, configuration: configuration)) {
            XCTAssertTrue("\($0)".contains("runs on SQLite only so far"), "\($0)")
        }
    }

    /// Replicas on PostgreSQL share one log key: each making its own would break page cursors across them.
    func testAPostgreSQLDatabaseWithoutASharedLogKeyIsRefused() throws {
        let password = scratch.appendingPathComponent("booking-db-password")
        try Data("secret".utf8).write(to: password)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: password.path)
        let process = try RunningProcess(
            try BuiltProducts.path("BookingService"),
            ["--host", "127.0.0.1", "--pki", pki.path, "--log-level", "info"] + freePorts + [
                "--data", scratch.appendingPathComponent("data").path,
                "--database", "postgresql://booking@127.0.0.1:5432/booking", "--database-password-file", password.path,
            ])
        let result = process.finish(timeout: 20)
        XCTAssertNotEqual(result.exitCode, 0, result.combinedOutput)
        let refusal = result.errorOutput.split(separator: "\n").first { $0.contains("cannot run:") } ?? ""
        XCTAssertTrue(refusal.contains("--log-key: required with a PostgreSQL --database"), result.combinedOutput)
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: scratch.appendingPathComponent("data/log.key").path),
            "refused before making a key of its own")
    }

    /// Content replicas sign image URLs: each with a key of its own would refuse the others' URLs.
    func testAContentReplicaOnPostgreSQLWithoutASharedImageURLKeyIsRefused() throws {
        let password = scratch.appendingPathComponent("content-db-password")
        try Data("secret".utf8).write(to: password)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: password.path)
        let logKey = scratch.appendingPathComponent("log.key")
        try Data(repeating: 7, count: 32).write(to: logKey)
        let process = try RunningProcess(
            try BuiltProducts.path("ContentService"),
            ["--host", "127.0.0.1", "--pki", pki.path, "--log-level", "info"] + freePorts + [
                "--image-port", "0", "--data", scratch.appendingPathComponent("data").path, "--log-key", logKey.path,
                "--database", "postgresql://content@127.0.0.1:5432/content", "--database-password-file", password.path,
            ])
        let result = process.finish(timeout: 20)
        XCTAssertNotEqual(result.exitCode, 0, result.combinedOutput)
        let refusal = result.errorOutput.split(separator: "\n").first { $0.contains("cannot run:") } ?? ""
        XCTAssertTrue(refusal.contains("--image-url-key: required with a PostgreSQL --database"), result.combinedOutput)
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: scratch.appendingPathComponent("data/image-url.key").path),
            "refused before making a key of its own")
    }
}

/// A service that declares no PostgreSQL versions.
private enum SQLiteOnlyDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(name: "sqlite-only", port: 7099, metricsPort: 9199)
    static let summary = "a service on SQLite only"
    static func migrate(_ migrator: inout DatabaseMigrator) {}
    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] { [] }
}
