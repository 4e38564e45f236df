import Foundation
import PostgresTestSupport
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// The whole Yedi system as `deploy/start.sh` runs it: the four real service executables as separate
/// processes over mutual TLS (the test PKI), on free loopback ports, with their data in one temporary
/// folder and development clocks, driven only through the built `yedi-probe` (JSON in, JSON out).
///
/// On PostgreSQL (`deploy/start.sh --postgres --replicas N`): N replicas of every service, each its own
/// process with its own data folder, on one fresh database per service of the tests' PostgreSQL; every
/// process lists every replica of its peers, and the probe's calls take turns over the replicas unless a
/// test names one.
///
/// Not thread-safe: use it from the test's own task.
final class YediSystem {
    enum Engine {
        case sqlite
        /// `replicas` processes per service on PostgreSQL: fresh databases on the tests' server, or, with
        /// `ownServer`, a PostgreSQL of the system's own (`deploy/postgres-dev.sh --dir`: one role and one
        /// database per service, as in production) that a test may stop and start again.
        case postgres(replicas: Int, ownServer: Bool = false)
    }

    /// A service's database: its URL and password file (the options a replica gets), and its name.
    struct ServiceDatabase {
        var url: String
        var passwordFile: String
        var name: String
    }

    static let services = ["account", "content", "booking", "chat"]
    static let executables = [
        "account": "AccountService", "content": "ContentService", "booking": "BookingService", "chat": "ChatService",
    ]

    /// The repository's app files, as `deploy/start.sh` passes them: the four apps are served.
    static let appsFolder = ServiceHarness.repositoryApps

    let root: URL
    let pki: TestPKI
    let engine: Engine
    /// Processes per service.
    let replicaCount: Int
    /// Each service's replicas' RPC ports, metrics ports and (ContentService's) HTTPS image ports.
    private var rpcPorts: [String: [Int]] = [:]
    private var metricsPorts: [String: [Int]] = [:]
    private var imagePorts: [Int] = []
    /// Keyed by `processKey`.
    private var processes: [String: RunningProcess] = [:]
    /// Each service's database and the options that name it (PostgreSQL only).
    private var databases: [String: ServiceDatabase] = [:]
    /// The folder of the system's own PostgreSQL (`Engine.postgres(ownServer: true)`).
    private var ownServer: String?
    private let probePath: String
    /// The replica the next call without one named goes to: calls take turns, so a write through one
    /// replica is read back through another.
    private var turn = 0

    init(engine: Engine = .sqlite) throws {
        self.engine = engine
        if case .postgres(let replicas, _) = engine { replicaCount = replicas } else { replicaCount = 1 }
        root = FileManager.default.temporaryDirectory.appendingPathComponent("yedi-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        pki = try TestPKI.get()
        probePath = try BuiltProducts.path("yedi-probe")
        // Each free when asked, and no two alike (the system asks for up to 36 at once).
        var taken: Set<Int> = []
        func port() throws -> Int {
            while true {
                let port = try ServiceHarness.unusedPort()
                if taken.insert(port).inserted { return port }
            }
        }
        for service in Self.services {
            rpcPorts[service] = try (0..<replicaCount).map { _ in try port() }
            metricsPorts[service] = try (0..<replicaCount).map { _ in try port() }
        }
        imagePorts = try (0..<replicaCount).map { _ in try port() }
    }

    /// Where `service`'s replica keeps its database (SQLite) and files; replica 0's is `data/<service>`, as
    /// `deploy/start.sh` names it.
    func dataDirectory(_ service: String, replica: Int = 0) -> URL {
        root.appendingPathComponent(replica == 0 ? "data/\(service)" : "data/\(service)-\(replica + 1)")
    }

    private func processKey(_ service: String, _ replica: Int) -> String { "\(service)#\(replica)" }

    /// Starts every service (each replica), then waits until each one says SERVING through the probe. On
    /// PostgreSQL every replica starts at once on its service's empty database (one migrates it, the
    /// others wait for it).
    func startAll() throws {
        if case .postgres(_, let own) = engine { try own ? startOwnServer() : makeDatabases() }
        for service in Self.services {
            for replica in 0..<replicaCount { try launch(service, replica: replica) }
        }
        for service in Self.services {
            for replica in 0..<replicaCount { try waitUntilServing(service, replica: replica) }
        }
    }

    /// Starts `service`'s replica (again) on its ports and data.
    func start(_ service: String, replica: Int = 0) throws {
        try launch(service, replica: replica)
        try waitUntilServing(service, replica: replica)
    }

    private func launch(_ service: String, replica: Int) throws {
        var arguments = [
            "--host", "127.0.0.1", "--port", "\(rpcPorts[service]![replica])",
            "--metrics-port", "\(metricsPorts[service]![replica])",
            "--pki", pki.devPKI.path, "--data", dataDirectory(service, replica: replica).path, "--apps",
            Self.appsFolder,
            "--development", "--dev-clock",
            "--log-level", "info",
            "--shutdown-grace", "2",
        ]
        for peer in Self.services where peer != service {
            arguments += ["--peer", "\(peer)=\(address(peer))"]
        }
        if service == "content" { arguments += ["--image-port", "\(imagePorts[replica])"] }
        if let database = databases[service] {
            // One log key (page cursors) and one image URL key for every replica, as deploy/start.sh makes.
            arguments += [
                "--database", database.url, "--database-password-file", database.passwordFile,
                "--log-key", try sharedKey("log.key"), "--replica", "\(service)-\(replica + 1)",
            ]
            if service == "content" { arguments += ["--image-url-key", try sharedKey("image-url.key")] }
            // BookingService's replicas share one development gateway, as they would share a real one.
            if service == "booking" {
                arguments += ["--dev-payments-folder", root.appendingPathComponent("dev-payments").path]
            }
        }
        processes[processKey(service, replica)] = try RunningProcess(
            try BuiltProducts.path(Self.executables[service]!), arguments)
    }

    /// A 32-byte key file in the system's folder, made once and given to every replica.
    private func sharedKey(_ name: String) throws -> String {
        let file = root.appendingPathComponent(name)
        if !FileManager.default.fileExists(atPath: file.path) {
            var generator = SystemRandomNumberGenerator()
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            guard
                FileManager.default.createFile(
                    atPath: file.path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
            else { throw E2EFailure("cannot write \(file.path)") }
        }
        return file.path
    }

    private func waitUntilServing(_ service: String, replica: Int, timeout: TimeInterval = 60) throws {
        let deadline = Date().addingTimeInterval(timeout)
        let process = processes[processKey(service, replica)]
        while Date() < deadline {
            let health = try runProbe(["health", address(service, replica: replica), "--timeout", "1"])
            if health.exitCode == 0 && health.output == "SERVING\n" { return }
            if let process, process.hasExited {
                throw E2EFailure("\(service) (replica \(replica + 1)) exited while starting:\n\(process.errorOutput)")
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw E2EFailure("\(service) not SERVING after \(timeout) s:\n\(process?.errorOutput ?? "")")
    }

    /// SIGKILL: no shutdown at all.
    func kill(_ service: String, replica: Int = 0) {
        guard let process = processes.removeValue(forKey: processKey(service, replica)) else { return }
        process.send(SIGKILL)
        _ = process.finish(timeout: 10)
    }

    /// SIGTERM to every service, each given time to finish gracefully; returns their logs.
    @discardableResult
    func stopAll() -> [String: ProcessResult] {
        for process in processes.values { process.send(SIGTERM) }
        var results: [String: ProcessResult] = [:]
        for (service, process) in processes { results[service] = process.finish(timeout: 20) }
        processes = [:]
        return results
    }

    /// The replica a call goes to when the test names none: each in turn (nil with one process per service).
    private func nextReplica(_ named: Int?) -> Int? {
        guard named == nil, replicaCount > 1 else { return named }
        defer { turn += 1 }
        return turn % replicaCount
    }

    /// The RPC port of `service`'s replica (for the tests' own clients).
    func rpcPort(_ service: String, replica: Int) -> Int { rpcPorts[service]![replica] }

    /// Every replica of `service` (`HOST:PORT,HOST:PORT…`, as the probe and the peers take it), or one.
    func address(_ service: String, replica: Int? = nil) -> String {
        let ports = rpcPorts[service]!
        return (replica.map { [ports[$0]] } ?? ports).map { "127.0.0.1:\($0)" }.joined(separator: ",")
    }

    /// The CPU time `service`'s (first) process has used so far.
    func cpuTime(_ service: String) -> Duration? { processes[processKey(service, 0)]?.cpuTime }

    /// Moves every process's development clock forward by `seconds` (each replica has its own clock).
    func advanceClocks(seconds: Int) throws {
        for service in Self.services {
            for replica in 0..<replicaCount {
                try call(
                    service, "yedi.runtime.DevClock/AdvanceClock", #"{"seconds": "\#(seconds)"}"#, asOperator: true,
                    replica: replica)
            }
        }
    }

    deinit {
        for process in processes.values { process.kill() }
        if let ownServer {
            _ = try? ProcessRunner.run("/bin/bash", [Self.postgresScript, "--dir", ownServer, "--stop"], timeout: 60)
            try? FileManager.default.removeItem(atPath: ownServer)
        } else if !databases.isEmpty {
            let names = databases.values.map(\.name)
            _ = try? Self.blocking {
                for name in names { try? await TestPostgres.administer("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
            }
        }
        try? FileManager.default.removeItem(at: root)
    }

    // MARK: The probe

    /// Runs `yedi-probe` with the test PKI as the dev PKI.
    func runProbe(_ arguments: [String], input: String? = nil, timeout: TimeInterval = 60) throws -> ProcessResult {
        try ProcessRunner.run(
            probePath, arguments, input: input, timeout: timeout, environment: ["YEDI_PKI": pki.devPKI.path])
    }

    /// `runProbe`, for other threads (the system itself is not thread-safe).
    var probeRunner: @Sendable ([String]) throws -> ProcessResult {
        let (probePath, pkiPath) = (self.probePath, pki.devPKI.path)
        return { arguments in
            try ProcessRunner.run(probePath, arguments, timeout: 60, environment: ["YEDI_PKI": pkiPath])
        }
    }

    /// A probe following a server stream (`Subscribe`), one JSON object per line on its stdout.
    func follow(
        _ service: String, _ method: String, _ request: String, token: String, replica: Int? = nil
    ) throws -> RunningProcess {
        try RunningProcess(
            probePath, ["call", address(service, replica: replica), method, request, "--token", token],
            environment: ["YEDI_PKI": pki.devPKI.path])
    }

    /// Calls `method` on `service` with a JSON request; the reply as a JSON object. Fails the test with
    /// the probe's stderr if the call does not succeed.
    /// `app` names the app of an anonymous call (`yedi-app`); `identity` presents another client
    /// certificate of the test PKI (a service's, to call as that service).
    @discardableResult
    func call(
        _ service: String, _ method: String, _ request: String = "{}", token: String? = nil, asOperator: Bool = false,
        app: String? = nil, identity: String? = nil, replica: Int? = nil, file: StaticString = #filePath,
        line: UInt = #line
    ) throws -> [String: Any] {
        let certificate = identity ?? (asOperator ? "operator" : nil)
        let result = try runProbe(
            ["call", address(service, replica: nextReplica(replica)), method, request, "--emit-defaults"]
                + (token.map { ["--token", $0] } ?? [])
                + (certificate.map { ["--cert", pki.certificate($0), "--key", pki.key($0)] } ?? [])
                + (app.map { ["-H", "yedi-app: \($0)"] } ?? []))
        guard result.exitCode == 0 else {
            throw E2EFailure("\(method) \(request) failed (exit \(result.exitCode)): \(result.errorOutput)")
        }
        guard let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any] else {
            throw E2EFailure("\(method) answered something that is not a JSON object: \(result.output)")
        }
        return object
    }

    /// Signs up the whole way through the probe, as the README's tour does: `SignUp`, the code from
    /// `yedi-probe sent-mail` (AccountService's development mailbox), `CompleteSignUp`; its reply
    /// (`user`, `session`).
    @discardableResult
    func signUp(_ request: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let started = try call("account", "yedi.account.AccountService/SignUp", request)
        let verificationID = started.string("verificationId")
        // The code is written by whichever AccountService replica's outbox delivered the mail.
        let deadline = Date().addingTimeInterval(20)
        var replica = 0
        var code: ProcessResult
        repeat {
            code = try runProbe([
                "sent-mail", "--folder",
                dataDirectory("account", replica: replica).appendingPathComponent("sent-mail").path,
                "--verification-id", verificationID, "--value", "code", "--wait", replicaCount == 1 ? "20" : "0.2",
            ])
            replica = (replica + 1) % replicaCount
        } while code.exitCode != 0 && Date() < deadline
        guard code.exitCode == 0 else {
            throw E2EFailure("sent-mail: no code (exit \(code.exitCode)): \(code.errorOutput)")
        }
        return try call(
            "account", "yedi.account.AccountService/CompleteSignUp",
            #"{"verificationId": "\#(verificationID)", "code": "\#(code.output.trimmingCharacters(in: .whitespacesAndNewlines))"}"#
        )
    }

    /// `call`, repeated while the answer is UNAVAILABLE ("try again"), as an app does: a service that asks a
    /// peer restarted a moment ago may still be reconnecting to it.
    @discardableResult
    func callRetryingUnavailable(
        _ service: String, _ method: String, _ request: String = "{}", token: String? = nil, timeout: TimeInterval = 20
    ) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            do {
                return try call(service, method, request, token: token)
            } catch let failure as E2EFailure where failure.description.contains("UNAVAILABLE") && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
    }

    /// Calls a method that must fail; the gRPC status name from the probe (`ERROR: NOT_FOUND: ...`) and
    /// the exit status, which is 10 + the status code.
    func failingCall(
        _ service: String, _ method: String, _ request: String, token: String? = nil, replica: Int? = nil
    ) throws -> (status: String, exitCode: Int32, message: String) {
        let result = try runProbe(
            ["call", address(service, replica: nextReplica(replica)), method, request]
                + (token.map { ["--token", $0] } ?? []))
        guard result.exitCode != 0 else { throw E2EFailure("\(method) \(request) succeeded: \(result.output)") }
        let line = result.errorOutput.split(separator: "\n").first { $0.hasPrefix("ERROR: ") } ?? ""
        let status = line.dropFirst("ERROR: ".count).prefix { $0 != ":" }
        return (String(status), result.exitCode, String(line))
    }
}

// MARK: PostgreSQL

extension YediSystem {
    /// One fresh database per service on the tests' PostgreSQL, owned by the test role (dropped at the end).
    fileprivate func makeDatabases() throws {
        let server = try TestPostgres.require()
        guard let marker = server.url.range(of: "/postgres?") else {
            throw E2EFailure("unexpected test PostgreSQL URL \(server.url)")
        }
        for service in Self.services {
            let name =
                "yedi_e2e_\(service)_"
                + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(8).lowercased()
            try Self.blocking { try await TestPostgres.administer("CREATE DATABASE \(name)") }
            databases[service] = ServiceDatabase(
                url: server.url.replacingCharacters(in: marker, with: "/\(name)?"), passwordFile: server.passwordFile,
                name: name)
        }
    }

    /// Every place in `service`'s PostgreSQL database that holds `needle` (`DataScan` for the engine).
    func findInDatabase(_ needle: String, of service: String) throws -> [DataScan.Finding] {
        guard let settings = try databaseSettings(service) else { return [] }
        return try Self.blocking { try await DataScan.find(needle, inPostgres: settings) }
    }

    /// The rows of `table` in `service`'s PostgreSQL database.
    func rowCount(_ table: String, of service: String) async throws -> Int {
        guard let settings = try databaseSettings(service) else { throw E2EFailure("\(service) is not on PostgreSQL") }
        return try await DataScan.rowCount(table, inPostgres: settings)
    }

    /// How a replica of `service` connects to its database, or nil on SQLite.
    private func databaseSettings(_ service: String) throws -> PostgresSettings? {
        guard let database = databases[service] else { return nil }
        let configuration = try ServiceConfiguration.resolve(
            options: try ServiceOptions.parse([
                "--database", database.url, "--database-password-file", database.passwordFile,
            ]),
            environment: [:], defaults: ServiceDefaults(name: service, port: 0, metricsPort: 0))
        guard case .postgres(let settings) = configuration.database else { throw E2EFailure("\(database.url)?") }
        return settings
    }

    private static let postgresScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("deploy/postgres-dev.sh").path

    /// Starts the system's own PostgreSQL (made on the first call) and reads each service's options.
    fileprivate func startOwnServer() throws {
        let folder = ownServer ?? "/tmp/yedi-pg-e2e-" + UUID().uuidString.prefix(8).lowercased()
        ownServer = folder
        let result = try ProcessRunner.run(
            "/bin/bash", [Self.postgresScript, "--dir", folder, "--test", "--env"], timeout: 120)
        guard result.exitCode == 0 else { throw E2EFailure("postgres-dev.sh failed: \(result.combinedOutput)") }
        var exports: [String: String] = [:]
        for line in result.output.split(separator: "\n") where line.hasPrefix("export ") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            exports[String(line[line.index(line.startIndex, offsetBy: 7)..<equals])] =
                String(line[line.index(after: equals)...]).trimmingCharacters(in: ["'"])
        }
        for service in Self.services {
            let variable = "YEDI_\(service.uppercased())_DATABASE"
            guard let url = exports[variable], let file = exports[variable + "_PASSWORD_FILE"] else {
                throw E2EFailure("postgres-dev.sh printed no \(variable)")
            }
            databases[service] = ServiceDatabase(url: url, passwordFile: file, name: "yedi_\(service)")
        }
    }

    /// Stops the system's own PostgreSQL (the services keep running).
    func stopDatabaseServer() throws {
        guard let ownServer else { throw E2EFailure("the system has no PostgreSQL of its own") }
        let result = try ProcessRunner.run(
            "/bin/bash", [Self.postgresScript, "--dir", ownServer, "--stop"], timeout: 60)
        guard result.exitCode == 0 else { throw E2EFailure("postgres-dev.sh --stop failed: \(result.combinedOutput)") }
    }

    /// Starts the system's own PostgreSQL again.
    func startDatabaseServer() throws { try startOwnServer() }

    /// Every place of `service` that holds `needle`: each replica's folder and, on PostgreSQL, its database.
    func find(_ needle: String, in service: String) throws -> [DataScan.Finding] {
        try (0..<replicaCount).flatMap { try DataScan.find(needle, in: dataDirectory(service, replica: $0)) }
            + findInDatabase(needle, of: service)
    }

    /// Runs `body` to its end from synchronous test code (the system drives processes, not tasks).
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox<T>()
        Task {
            do { result.value = .success(try await body()) } catch { result.value = .failure(error) }
            done.signal()
        }
        done.wait()
        return try result.value!.get()
    }
}

/// Handed from the task to the waiting thread (the semaphore orders the write before the read).
private final class ResultBox<T>: @unchecked Sendable {
    var value: Result<T, any Error>?
}

struct E2EFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension [String: Any] {
    /// The value at a dotted path (`session.accessToken`, `posts.0.id`), as the probe's --field reads it.
    func at(_ path: String) -> Any? {
        var value: Any? = self
        for name in path.split(separator: ".") {
            switch value {
            case let object as [String: Any]: value = object[String(name)]
            case let array as [Any]: value = Int(name).flatMap { array.indices.contains($0) ? array[$0] : nil }
            default: return nil
            }
        }
        return value
    }

    func string(_ path: String) -> String { at(path) as? String ?? "" }
}
