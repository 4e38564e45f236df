import ArgumentParser
import Foundation
import ServiceRuntime
import XCTest

/// `--database` & co. (docs/postgres.md, "Configuration"): SQLite by default; a PostgreSQL URL with its
/// password in a 0600 file; each bad value one line naming the option (and never the password).
final class DatabaseConfigurationTests: XCTestCase {
    private let defaults = ServiceDefaults(name: "account", port: 7001, metricsPort: 9101)
    private var folder = ""
    private var passwordFile = ""

    override func setUpWithError() throws {
        folder = NSTemporaryDirectory() + "yedi-dbconfig-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        passwordFile = folder + "/password"
        try "s3cret\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: folder)
    }

    private func resolve(_ arguments: [String], _ environment: [String: String] = [:]) throws -> ServiceConfiguration {
        try ServiceConfiguration.resolve(
            options: try ServiceOptions.parse(arguments), environment: environment, defaults: defaults)
    }

    private func postgres(_ arguments: [String], _ environment: [String: String] = [:]) throws -> PostgresSettings {
        let configuration = try resolve(arguments + ["--database-password-file", passwordFile], environment)
        guard case .postgres(let settings) = configuration.database else {
            XCTFail("\(arguments) did not choose PostgreSQL")
            throw CancellationError()
        }
        return settings
    }

    /// The one line a bad configuration gives.
    private func problem(_ arguments: [String], _ environment: [String: String] = [:]) -> String {
        do {
            _ = try resolve(arguments, environment)
            return "accepted"
        } catch {
            return "\(error)"
        }
    }

    func testSQLiteIsTheDefaultAndTheReplicaIsHostAndPort() throws {
        let configuration = try resolve([])
        XCTAssertEqual(configuration.database, .sqlite)
        XCTAssertEqual(configuration.replica, "127.0.0.1:7001")
        XCTAssertEqual(try resolve(["--database", "sqlite"]).database, .sqlite)
        XCTAssertEqual(try resolve(["--replica", "account-2"]).replica, "account-2")
        XCTAssertEqual(try resolve([], ["YEDI_REPLICA": "a-3"]).replica, "a-3")
        XCTAssertEqual(try resolve(["--port", "7011"]).replica, "127.0.0.1:7011")
    }

    func testALoopbackURLAndItsDefaults() throws {
        let settings = try postgres(["--database", "postgresql://yedi_account@localhost:5433/yedi_account"])
        XCTAssertEqual(settings.address, .tcp(host: "localhost", port: 5433))
        XCTAssertEqual(settings.role, "yedi_account")
        XCTAssertEqual(settings.database, "yedi_account")
        XCTAssertEqual(settings.tls, .disable, "loopback: no TLS unless asked")
        XCTAssertEqual(settings.poolSize, 6)
        XCTAssertEqual(settings.timeout, .seconds(5))
        XCTAssertEqual(settings.connectTimeout, .seconds(30))
        XCTAssertEqual(settings.passwordFile, passwordFile)
        XCTAssertEqual(try settings.readPassword(), "s3cret", "the file's text without its newline")
    }

    func testAUnixSocketFolderAndAnotherHost() throws {
        let socket = try postgres(["--database", "postgresql://r@localhost/d?host=/run/yedi-pg"])
        XCTAssertEqual(socket.address, .unixSocket(folder: "/run/yedi-pg", port: 5432))
        XCTAssertEqual(socket.address.socketPath, "/run/yedi-pg/.s.PGSQL.5432")
        XCTAssertEqual(socket.tls, .disable)

        let remote = try postgres(["--database", "postgres://r@db.internal/d"])
        XCTAssertEqual(remote.address, .tcp(host: "db.internal", port: 5432))
        XCTAssertEqual(remote.tls, .verifyFull, "TCP to another host verifies the server by default")
    }

    func testEachOptionFromItsFlagAndFromTheEnvironment() throws {
        let caFile = folder + "/ca.pem"
        try "not checked here".write(toFile: caFile, atomically: true, encoding: .utf8)
        let url = "postgresql://r@db.internal:6432/d?sslmode=verify-full"
        let flags = try postgres([
            "--database", url, "--database-ca", caFile, "--database-pool-size", "9", "--database-timeout", "1.5",
            "--database-connect-timeout", "60",
        ])
        let environment = try postgres(
            [],
            [
                "YEDI_DATABASE": url, "YEDI_DATABASE_CA": caFile, "YEDI_DATABASE_POOL_SIZE": "9",
                "YEDI_DATABASE_TIMEOUT": "1.5", "YEDI_DATABASE_CONNECT_TIMEOUT": "60",
            ])
        XCTAssertEqual(flags, environment)
        XCTAssertEqual(flags.caFile, caFile)
        XCTAssertEqual(flags.poolSize, 9)
        XCTAssertEqual(flags.timeout, .milliseconds(1_500))
        XCTAssertEqual(flags.connectTimeout, .seconds(60))
        XCTAssertEqual(flags.address, .tcp(host: "db.internal", port: 6432))
        let fromVariable = try resolve([], ["YEDI_DATABASE": url, "YEDI_DATABASE_PASSWORD_FILE": passwordFile])
        XCTAssertEqual(fromVariable.database, .postgres(try postgres(["--database", url])))
    }

    func testAPasswordInTheURLIsRefusedWithoutRepeatingIt() {
        let line = problem([
            "--database", "postgresql://r:hunter22@localhost/d", "--database-password-file", passwordFile,
        ])
        XCTAssertTrue(line.hasPrefix("--database (YEDI_DATABASE): the URL holds a password"), line)
        XCTAssertTrue(line.contains("--database-password-file"), line)
        XCTAssertFalse(line.contains("hunter22"), "the message repeats the password: \(line)")
    }

    func testThePasswordFileIsRequiredAndPrivate() throws {
        let url = "postgresql://r@localhost/d"
        XCTAssertEqual(
            problem(["--database", url]),
            "--database-password-file (YEDI_DATABASE_PASSWORD_FILE): required with a PostgreSQL --database (a file "
                + "of mode 0600, or 0640 owned by root and the service's group)")
        XCTAssertTrue(
            problem(["--database", url, "--database-password-file", folder + "/missing"]).hasPrefix(
                "--database-password-file (YEDI_DATABASE_PASSWORD_FILE): \(folder)/missing: No such file"))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: passwordFile)
        XCTAssertEqual(
            problem(["--database", url, "--database-password-file", passwordFile]),
            "--database-password-file (YEDI_DATABASE_PASSWORD_FILE): \(passwordFile) is readable by others (mode "
                + "644); make it 0600 (chmod 600), or 0640 owned by root and this service's group")
        try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: passwordFile)
        XCTAssertNoThrow(try resolve(["--database", url, "--database-password-file", passwordFile]))
        XCTAssertEqual(
            problem(["--database-password-file", passwordFile]),
            "--database-password-file (YEDI_DATABASE_PASSWORD_FILE): only with a PostgreSQL --database")
    }

    /// install.sh's way: root's file, readable by the service's own group (never writable by it, never a
    /// group another service is in).
    func testARootOwnedPasswordFileMayBeReadByTheServicesGroup() throws {
        try XCTSkipUnless(getuid() == 0, "changing a file's owner needs root")
        let url = "postgresql://r@localhost/d"
        let options = ["--database", url, "--database-password-file", passwordFile]
        try FileManager.default.setAttributes(
            [.posixPermissions: 0o640, .ownerAccountID: 0, .groupOwnerAccountID: getegid()], ofItemAtPath: passwordFile)
        XCTAssertNoThrow(try resolve(options))
        try FileManager.default.setAttributes([.posixPermissions: 0o660], ofItemAtPath: passwordFile)
        XCTAssertTrue(problem(options).contains("mode 660"), "writable by the group")
        try FileManager.default.setAttributes(
            [.posixPermissions: 0o640, .groupOwnerAccountID: 65534], ofItemAtPath: passwordFile)
        XCTAssertTrue(problem(options).contains("mode 640"), "another group")
        try FileManager.default.setAttributes(
            [.ownerAccountID: 65534, .groupOwnerAccountID: getegid()], ofItemAtPath: passwordFile)
        XCTAssertTrue(problem(options).contains("mode 640"), "0640 only when root owns it")
    }

    /// Every bad value: one line, naming the option.
    func testBadValues() {
        let file = ["--database-password-file", passwordFile]
        let cases: [([String], String)] = [
            (["--database", "mysql://r@h/d"], "--database (YEDI_DATABASE): is neither sqlite nor postgresql://"),
            (["--database", "postgresql://localhost/d"], "--database (YEDI_DATABASE): names no role"),
            (["--database", "postgresql://r@localhost/"], "--database (YEDI_DATABASE): names no database"),
            (["--database", "postgresql://r@localhost/Bad-Name"], "--database (YEDI_DATABASE): names no database"),
            (["--database", "postgresql://r@/d"], "--database (YEDI_DATABASE): names no host"),
            (
                ["--database", "postgresql://r@localhost/d?host=run/pg"],
                "--database (YEDI_DATABASE): ?host= must be an absolute socket folder"
            ),
            (
                ["--database", "postgresql://r@localhost/d?host=/" + String(repeating: "x", count: 100)],
                "--database (YEDI_DATABASE): the socket folder"
            ),
            (
                ["--database", "postgresql://r@localhost/d?application_name=x"],
                "--database (YEDI_DATABASE): unknown URL parameter \"application_name\""
            ),
            (
                ["--database", "postgresql://r@localhost/d?sslmode=require"],
                "--database (YEDI_DATABASE): sslmode=require is not verify-full or disable"
            ),
            (
                ["--database", "postgresql://r@db.internal/d?sslmode=disable"],
                "--database (YEDI_DATABASE): sslmode=disable is only for a Unix socket or loopback"
            ),
            (
                ["--database", "postgresql://r@localhost/d?host=/run/pg&sslmode=verify-full"],
                "--database (YEDI_DATABASE): sslmode=verify-full does not apply to a Unix socket"
            ),
            (
                ["--database", "postgresql://r@localhost/d", "--database-ca", "/ca.pem"],
                "--database-ca (YEDI_DATABASE_CA): only with sslmode=verify-full"
            ),
            (
                ["--database", "postgresql://r@db.internal/d", "--database-ca", "/no/such/ca.pem"],
                "--database-ca (YEDI_DATABASE_CA): /no/such/ca.pem is not a readable file"
            ),
            (
                ["--database", "postgresql://r@localhost/d", "--database-pool-size", "0"],
                "--database-pool-size (YEDI_DATABASE_POOL_SIZE): \"0\" is not a whole number from 1 to 100"
            ),
            (
                ["--database", "postgresql://r@localhost/d", "--database-timeout", "soon"],
                "--database-timeout (YEDI_DATABASE_TIMEOUT): \"soon\" is not a number"
            ),
            (
                ["--database", "postgresql://r@localhost/d", "--database-connect-timeout", "4000"],
                "--database-connect-timeout (YEDI_DATABASE_CONNECT_TIMEOUT): \"4000\" is not a number"
            ),
            (["--replica", "a b"], "--replica (YEDI_REPLICA): \"a b\" is not 1 to 64 visible ASCII characters"),
        ]
        for (arguments, expected) in cases {
            let line = problem(arguments + file)
            XCTAssertTrue(line.hasPrefix(expected), "\(arguments): \(line)")
            XCTAssertFalse(line.contains("\n"), "\(arguments): more than one line: \(line)")
        }
    }
}
