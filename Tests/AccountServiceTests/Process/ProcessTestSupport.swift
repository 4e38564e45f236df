import Foundation
import GRDB
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

/// Helpers of the process-level AccountService tests (real executables, in-process peer stubs).
enum ProcessTesting {
    /// Opens a service's database file read-only (the service may still be running: WAL lets it).
    static func openReadOnly(_ path: String) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabasePool(path: path, configuration: configuration)
    }
}

/// A real service executable (`AccountService`, `ChatService`, built beside the tests) running as a child
/// process on the test PKI, on loopback ports chosen here, with its data in `dataDirectory`.
///
/// Not thread-safe (like `RunningProcess`): use it from the test's own task.
final class ServiceProcess: @unchecked Sendable {
    let executable: String
    let port: Int
    let metricsPort: Int
    let dataDirectory: String
    private let process: RunningProcess
    private let harness: ServiceHarness

    /// Starts `executable` (with `arguments` beside the test ones: `--apps FOLDER`) and waits until its
    /// health check answers SERVING.
    static func start(
        _ executable: String,
        harness: ServiceHarness,
        dataDirectory: String,
        peers: [String: Int],
        port: Int? = nil,
        arguments extra: [String] = [],
        timeout: TimeInterval = 60
    ) async throws -> ServiceProcess {
        let service = try ServiceProcess(
            executable, harness: harness, dataDirectory: dataDirectory, port: try port ?? ServiceHarness.unusedPort(),
            metricsPort: try ServiceHarness.unusedPort(), peers: peers, extra: extra)
        try await service.waitUntilServing(timeout: timeout)
        return service
    }

    private init(
        _ executable: String, harness: ServiceHarness, dataDirectory: String, port: Int, metricsPort: Int,
        peers: [String: Int], extra: [String]
    ) throws {
        self.executable = executable
        self.harness = harness
        self.dataDirectory = dataDirectory
        self.port = port
        self.metricsPort = metricsPort
        var arguments = [
            "--pki", harness.pki.devPKI.path, "--data", dataDirectory, "--port", "\(port)",
            "--metrics-port", "\(metricsPort)", "--log-level", "warning", "--shutdown-grace", "1",
            // The crash tests sign up hundreds of users on one connection: the limits on one client off.
            "--sign-in-rate-per-address", "1000000/60", "--sign-in-rate-per-connection", "1000000/60",
        ]
        for (name, peerPort) in peers.sorted(by: { $0.key < $1.key }) {
            arguments += ["--peer", "\(name)=127.0.0.1:\(peerPort)"]
        }
        arguments += extra
        process = try RunningProcess(try BuiltProducts.path(executable), arguments)
    }

    /// Polls `yedi.health.Health/Check` over TLS (a new connection each time) until SERVING.
    func waitUntilServing(timeout: TimeInterval) async throws {
        let configuration = harness.clientConfiguration(port: port)
        let serving = try await eventually(timeout: timeout) {
            let status = try? await withRPCClient(configuration: configuration) { client in
                try await YediHealth.Health.Client(client).check(
                    .init(), options: CallOptions(timeout: .milliseconds(500))
                ).status
            }
            return status == .serving
        }
        guard serving else {
            let result = process.finish(timeout: 5)
            throw ServiceProcessError(
                description: "\(executable) did not become SERVING in \(timeout) s:\n\(result.combinedOutput)")
        }
    }

    /// A client of the process over TLS, presenting `identity`'s certificate if given.
    func clientConfiguration(identity: String? = nil) -> ClientConfiguration {
        harness.clientConfiguration(port: port, identity: identity)
    }

    /// SIGKILL: no shutdown, no flush; what was acknowledged must already be on disk.
    @discardableResult
    func kill() -> ProcessResult {
        process.send(SIGKILL)
        return process.finish(timeout: 10)
    }

    /// SIGTERM: graceful shutdown.
    @discardableResult
    func stop() -> ProcessResult {
        process.send(SIGTERM)
        return process.finish(timeout: 20)
    }

    var errorOutput: String { process.errorOutput }
}

struct ServiceProcessError: Error, CustomStringConvertible {
    var description: String
}

// MARK: Peer stubs: "content", "booking" and "chat" that record PurgeUser

/// What the three stub peers received. A held stub's PurgeUser waits until the stub is released (so a
/// delivery can be kept from finishing); each stub applies a delivery once, through `ReceiptLedger`.
final class PurgeRecorder: Sendable {
    private struct State {
        var arrivals: [String: [String]] = [:]
        var applied: [String: [String]] = [:]
        var held: Set<String> = []
    }

    private let state = LockedValue(State())

    /// The stub that every `PurgeStubs` definition records into; each test installs a new one.
    static let current = LockedValue(PurgeRecorder())

    static func install() -> PurgeRecorder {
        let recorder = PurgeRecorder()
        current.withLock { $0 = recorder }
        return recorder
    }

    /// User ids of every delivery that reached `service` (repeats included).
    func arrivals(_ service: String) -> [String] { state.withLock { $0.arrivals[service] ?? [] } }

    /// User ids `service` applied (first deliveries only).
    func applied(_ service: String) -> [String] { state.withLock { $0.applied[service] ?? [] } }

    func hold(_ service: String) { state.withLock { _ = $0.held.insert(service) } }

    func release(_ service: String) { state.withLock { _ = $0.held.remove(service) } }

    fileprivate func arrived(_ service: String, _ user: String) {
        state.withLock { $0.arrivals[service, default: []].append(user) }
    }

    fileprivate func recordApplied(_ service: String, _ user: String) {
        state.withLock { $0.applied[service, default: []].append(user) }
    }

    fileprivate func waitWhileHeld(_ service: String) async throws {
        while state.withLock({ $0.held.contains(service) }) { try await Task.sleep(for: .milliseconds(20)) }
    }
}

enum PurgeStubs {
    /// `service`'s PurgeUser only: records the arrival, waits while held, applies once.
    static func methods(
        _ service: String,
        _ descriptor: ServiceDescriptor,
        _ method: RPCMethod<YediCommon.PurgeUserRequest, YediCommon.PurgeUserResponse>,
        _ env: ServiceEnvironment
    ) -> RPCMethodSet {
        let recorder = PurgeRecorder.current.value
        return RPCMethodSet(descriptor) { router in
            router.register(method) { request, context in
                recorder.arrived(service, request.userID)
                try await recorder.waitWhileHeld(service)
                let first = try await env.database.write { db in
                    try ReceiptLedger.isFirstDelivery(in: db, Delivery(context), nowMilliseconds: 0)
                }
                if first { recorder.recordApplied(service, request.userID) }
                return YediCommon.PurgeUserResponse()
            }
        }
    }
}

/// "content" (presents content's certificate) serving only PurgeUser.
enum ContentPurgeStub: ServiceDefinition {
    static let defaults = ServiceDefaults(name: "content", port: 0, metricsPort: 0)
    static let summary = "PurgeUser stub"
    static func migrate(_ migrator: inout DatabaseMigrator) {}
    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        [
            PurgeStubs.methods(
                "content", YediContent.ContentService.descriptor, YediContent.ContentService.Method.purgeUser, env)
        ]
    }
}

/// "booking" serving only PurgeUser.
enum BookingPurgeStub: ServiceDefinition {
    static let defaults = ServiceDefaults(name: "booking", port: 0, metricsPort: 0)
    static let summary = "PurgeUser stub"
    static func migrate(_ migrator: inout DatabaseMigrator) {}
    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        [
            PurgeStubs.methods(
                "booking", YediBooking.BookingService.descriptor, YediBooking.BookingService.Method.purgeUser, env)
        ]
    }
}

/// "chat" serving only PurgeUser.
enum ChatPurgeStub: ServiceDefinition {
    static let defaults = ServiceDefaults(name: "chat", port: 0, metricsPort: 0)
    static let summary = "PurgeUser stub"
    static func migrate(_ migrator: inout DatabaseMigrator) {}
    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        [PurgeStubs.methods("chat", YediChat.ChatService.descriptor, YediChat.ChatService.Method.purgeUser, env)]
    }
}

/// The three stubs, running in this process.
struct PurgeStubSet {
    var services: [String: RunningService] = [:]

    static let names = ["content", "booking", "chat"]

    /// Starts the stubs named in `names`, each on `ports[name]` if given (else a free port).
    static func start(
        _ names: [String] = PurgeStubSet.names, harness: ServiceHarness, ports: [String: Int] = [:]
    ) async throws -> PurgeStubSet {
        var set = PurgeStubSet()
        for name in names { try await set.start(name, harness: harness, port: ports[name] ?? 0) }
        return set
    }

    mutating func start(_ name: String, harness: ServiceHarness, port: Int) async throws {
        let service: RunningService
        switch name {
        case "content":
            service = try await harness.start(
                ContentPurgeStub.self,
                configuration: try harness.configuration(ContentPurgeStub.defaults, port: port))
        case "booking":
            service = try await harness.start(
                BookingPurgeStub.self,
                configuration: try harness.configuration(BookingPurgeStub.defaults, port: port))
        default:
            service = try await harness.start(
                ChatPurgeStub.self, configuration: try harness.configuration(ChatPurgeStub.defaults, port: port))
        }
        services[name] = service
    }

    func ports() async throws -> [String: Int] {
        var ports: [String: Int] = [:]
        for (name, service) in services { ports[name] = try await service.port }
        return ports
    }

    func stop() async throws {
        for service in services.values { try await service.stop() }
    }
}
