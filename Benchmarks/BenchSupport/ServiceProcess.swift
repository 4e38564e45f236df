import Foundation
import Logging
import RPCCore
import YediProto

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// A real service executable (`AccountService`, `BookingService`, …) as a child process on loopback, its
/// output in `log`: the benches measure the process a deployment runs, over TLS, not an in-process copy.
public struct ServiceProcess: @unchecked Sendable {
    // @unchecked: `Process` is used for `terminate` and `isRunning` only, which Foundation locks.
    public let name: String
    public let port: Int
    public let pki: String
    /// Its data folder (`--data`).
    public let data: String
    public let log: String
    /// Its `/metrics` and `/healthz` port (plain HTTP on loopback).
    public let metricsPort: Int
    private let process: Process

    /// Its peak resident memory so far (`VmHWM` of /proc/<pid>/status), in bytes.
    public func peakResidentBytes() throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kib = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { throw BenchError("no VmHWM in /proc/\(process.processIdentifier)/status") }
        return kib * 1_024
    }

    /// The CPU time it has used so far, user and system, in seconds: read before and after a run, the
    /// service's own CPU per call, whatever else shares the machine.
    public func cpuSeconds() throws -> Double { try ProcessCPU.seconds(of: process.processIdentifier) }

    /// `name` in the folder of the running executable (both are products of the same build).
    public static func besideThisExecutable(_ name: String) throws -> String {
        let own = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let path = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchError("\(path) is missing: swift build -c release --product \(name) (or pass --service)")
        }
        return path
    }

    /// Starts the service on `port` (a free one by default) with `arguments` after the common ones, and
    /// waits until its health check answers SERVING.
    public static func start(
        _ executable: String, name: String, port: Int? = nil, pki: String, data: String, log: String,
        arguments: [String] = []
    ) async throws -> ServiceProcess {
        let port = try port ?? freePort()
        let metricsPort = try freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments =
            [
                "--pki", pki, "--data", data, "--port", "\(port)", "--metrics-port", "\(metricsPort)",
                "--log-level", "warning",
            ] + arguments
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let running = ServiceProcess(
            name: name, port: port, pki: pki, data: data, log: log, metricsPort: metricsPort, process: process)
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            guard process.isRunning else { throw BenchError("\(name) exited at start; see \(log)") }
            if await running.isServing() { return running }
            try await Task.sleep(for: .milliseconds(100))
        }
        try? running.stop()
        throw BenchError("\(name) did not become SERVING in 60 s; see \(log)")
    }

    /// Calls it has answered so far, health checks and watches left out (`yedi_rpc_server_calls_total`
    /// from its `/metrics`): what the clients' balancing sends it.
    public func callsAnswered() async throws -> Int {
        let url = URL(string: "http://127.0.0.1:\(metricsPort)/metrics")!
        let (data, _) = try await URLSession.shared.data(from: url)
        var calls = 0
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n")
        where line.hasPrefix("yedi_rpc_server_calls_total{") && !line.contains("Health") {
            calls += line.split(separator: " ").last.flatMap { Double($0) }.map { Int($0) } ?? 0
        }
        return calls
    }

    /// Starts replicas of one service, each with its own data folder `work/data-<replica>` and log
    /// `work/service-<replica><run>.log`: called with the replica, a port (a free one when nil) and the
    /// run's name (a restart gets a log of its own).
    public static func replicaStarter(
        _ executable: String, name: String, pki: String, work: URL, arguments: [String]
    ) -> @Sendable (_ replica: Int, _ port: Int?, _ run: String) async throws -> ServiceProcess {
        { replica, port, run in
            try await start(
                executable, name: name, port: port, pki: pki,
                data: work.appendingPathComponent("data-\(replica)").path,
                log: work.appendingPathComponent("service-\(replica)\(run).log").path, arguments: arguments)
        }
    }

    /// A client of the process trusting the PKI's CA, one attempt per call (a bench counts failures).
    public func clientConfiguration(maxFrameBytes: Int = WireLimits.default.maxFrameBytes) -> ClientConfiguration {
        var logger = Logger(label: "bench.\(name)")
        logger.logLevel = .error
        return ClientConfiguration(
            targets: [.init(host: "127.0.0.1", port: port)],
            tls: .client(trustRootsFile: pki + "/ca.pem"),
            serverName: "localhost",
            maxAttempts: 1,
            limits: WireLimits(maxFrameBytes: maxFrameBytes),
            logger: logger)
    }

    private func isServing() async -> Bool {
        let status = try? await withRPCClient(configuration: clientConfiguration()) { client in
            try await YediHealth.Health.Client(client).check(.init(), options: CallOptions(timeout: .seconds(1)))
                .status
        }
        return status == .serving
    }

    /// SIGTERM, then waits for the process to exit (graceful shutdown closes the database).
    public func stop() throws {
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<600 {
            if !process.isRunning { return }
            usleep(50_000)
        }
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        throw BenchError("\(name) did not stop within 30 s of SIGTERM; see \(log)")
    }

    /// SIGKILL: no shutdown at all (a replica dying); returns once the process is gone.
    public func kill() {
        guard process.isRunning else { return }
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// A client spreading its calls over every process of `replicas` (one service's), with the client's
    /// default retries, ejection and health watch: what a peer or an app does against replicas.
    public static func clientConfiguration(spreadingOver replicas: [ServiceProcess]) -> ClientConfiguration {
        var configuration = replicas[0].clientConfiguration()
        configuration.targets = replicas.map { .init(host: "127.0.0.1", port: $0.port) }
        configuration.maxAttempts =
            ClientConfiguration(targets: configuration.targets, tls: configuration.tls)
            .maxAttempts
        return configuration
    }

    /// A loopback port nothing listens on (bound to port 0, then released).
    public static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw BenchError("socket: \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw BenchError("bind: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
