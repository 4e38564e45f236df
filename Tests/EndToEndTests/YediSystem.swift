import Foundation
import RPCTestSupport
import ServiceTestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// The whole Yedi system as `deploy/start.sh` runs it: the four real service executables as separate
/// processes over mutual TLS (the test PKI), on free loopback ports, with their data in one temporary
/// folder and development clocks, driven only through the built `yedi-probe` (JSON in, JSON out).
///
/// Not thread-safe: use it from the test's own task.
final class YediSystem {
    static let services = ["account", "content", "booking", "chat"]
    static let executables = [
        "account": "AccountService", "content": "ContentService", "booking": "BookingService", "chat": "ChatService",
    ]

    /// The repository's app files, as `deploy/start.sh` passes them: the four apps are served.
    static let appsFolder = ServiceHarness.repositoryApps

    let root: URL
    let pki: TestPKI
    private(set) var rpcPorts: [String: Int] = [:]
    private(set) var metricsPorts: [String: Int] = [:]
    /// ContentService's HTTPS image port (docs/platform.md, "Images").
    private(set) var imagePort = 0
    private var processes: [String: RunningProcess] = [:]
    private let probePath: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("yedi-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        pki = try TestPKI.get()
        probePath = try BuiltProducts.path("yedi-probe")
        for service in Self.services {
            rpcPorts[service] = try ServiceHarness.unusedPort()
            metricsPorts[service] = try ServiceHarness.unusedPort()
        }
        imagePort = try ServiceHarness.unusedPort()
    }

    /// Where `service` keeps its database and files.
    func dataDirectory(_ service: String) -> URL { root.appendingPathComponent("data/\(service)") }

    /// Starts every service, then waits until each one says SERVING through the probe.
    func startAll() throws {
        for service in Self.services { try launch(service) }
        for service in Self.services { try waitUntilServing(service) }
    }

    /// Starts `service` (again) on its ports and data.
    func start(_ service: String) throws {
        try launch(service)
        try waitUntilServing(service)
    }

    private func launch(_ service: String) throws {
        var arguments = [
            "--host", "127.0.0.1", "--port", "\(rpcPorts[service]!)", "--metrics-port", "\(metricsPorts[service]!)",
            "--pki", pki.devPKI.path, "--data", dataDirectory(service).path, "--apps", Self.appsFolder,
            "--development", "--dev-clock",
            "--log-level", "info",
            "--shutdown-grace", "2",
        ]
        for peer in Self.services where peer != service {
            arguments += ["--peer", "\(peer)=127.0.0.1:\(rpcPorts[peer]!)"]
        }
        if service == "content" { arguments += ["--image-port", "\(imagePort)"] }
        processes[service] = try RunningProcess(try BuiltProducts.path(Self.executables[service]!), arguments)
    }

    private func waitUntilServing(_ service: String, timeout: TimeInterval = 60) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let health = try runProbe(["health", address(service), "--timeout", "1"])
            if health.exitCode == 0 && health.output == "SERVING\n" { return }
            if let process = processes[service], process.hasExited {
                throw E2EFailure("\(service) exited while starting:\n\(process.errorOutput)")
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw E2EFailure("\(service) not SERVING after \(timeout) s:\n\(processes[service]?.errorOutput ?? "")")
    }

    /// SIGKILL: no shutdown at all.
    func kill(_ service: String) {
        guard let process = processes.removeValue(forKey: service) else { return }
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

    func address(_ service: String) -> String { "127.0.0.1:\(rpcPorts[service]!)" }

    /// The CPU time `service`'s process has used so far.
    func cpuTime(_ service: String) -> Duration? { processes[service]?.cpuTime }

    deinit {
        for process in processes.values { process.kill() }
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
    func follow(_ service: String, _ method: String, _ request: String, token: String) throws -> RunningProcess {
        try RunningProcess(
            probePath, ["call", address(service), method, request, "--token", token],
            environment: ["YEDI_PKI": pki.devPKI.path])
    }

    /// Calls `method` on `service` with a JSON request; the reply as a JSON object. Fails the test with
    /// the probe's stderr if the call does not succeed.
    /// `app` names the app of an anonymous call (`yedi-app`); `identity` presents another client
    /// certificate of the test PKI (a service's, to call as that service).
    @discardableResult
    func call(
        _ service: String, _ method: String, _ request: String = "{}", token: String? = nil, asOperator: Bool = false,
        app: String? = nil, identity: String? = nil, file: StaticString = #filePath, line: UInt = #line
    ) throws -> [String: Any] {
        let certificate = identity ?? (asOperator ? "operator" : nil)
        let result = try runProbe(
            ["call", address(service), method, request, "--emit-defaults"] + (token.map { ["--token", $0] } ?? [])
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
        let code = try runProbe([
            "sent-mail", "--folder", dataDirectory("account").appendingPathComponent("sent-mail").path,
            "--verification-id", verificationID, "--value", "code", "--wait", "20",
        ])
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
        _ service: String, _ method: String, _ request: String, token: String? = nil
    ) throws -> (status: String, exitCode: Int32, message: String) {
        let result = try runProbe(["call", address(service), method, request] + (token.map { ["--token", $0] } ?? []))
        guard result.exitCode != 0 else { throw E2EFailure("\(method) \(request) succeeded: \(result.output)") }
        let line = result.errorOutput.split(separator: "\n").first { $0.hasPrefix("ERROR: ") } ?? ""
        let status = line.dropFirst("ERROR: ".count).prefix { $0 != ":" }
        return (String(status), result.exitCode, String(line))
    }
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
