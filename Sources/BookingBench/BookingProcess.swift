import Foundation
import Logging
import RPCCore

#if canImport(Glibc)
    import Glibc
#endif

/// The real `BookingService` executable as a child process, on free loopback ports, its output in `log`.
struct BookingProcess: @unchecked Sendable {
    // @unchecked: `Process` is used for `terminate` and `isRunning` only, which Foundation locks.
    let port: Int
    let pki: String
    let log: String
    private let process: Process

    /// `BookingService` in the folder of the running executable (both are products of the same build).
    static func besideThisExecutable() throws -> String {
        let own = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let path = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("BookingService").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchError(
                "\(path) is missing: swift build -c release --product BookingService (or pass --service)")
        }
        return path
    }

    /// Starts the service and waits until its health check answers SERVING.
    static func start(_ executable: String, pki: String, data: String, log: String) async throws -> BookingProcess {
        let port = try freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        // AccountService on a port nothing listens on: the seeded designers never need it.
        let nowhere = try freePort()
        process.arguments = [
            "--pki", pki, "--data", data, "--port", "\(port)", "--metrics-port", "\(try freePort())",
            "--log-level", "warning", "--peer", "account=127.0.0.1:\(nowhere)",
        ]
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let running = BookingProcess(port: port, pki: pki, log: log, process: process)
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            guard process.isRunning else { throw BenchError("BookingService exited at start; see \(log)") }
            if await running.isServing() { return running }
            try await Task.sleep(for: .milliseconds(100))
        }
        try? running.stop()
        throw BenchError("BookingService did not become SERVING in 60 s; see \(log)")
    }

    func clientConfiguration() -> ClientConfiguration {
        var logger = Logger(label: "booking-bench")
        logger.logLevel = .error
        return ClientConfiguration(
            targets: [.init(host: "127.0.0.1", port: port)],
            tls: .client(trustRootsFile: pki + "/ca.pem"),
            serverName: "localhost",
            maxAttempts: 1,
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
    func stop() throws {
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<600 {
            if !process.isRunning { return }
            usleep(50_000)
        }
        kill(process.processIdentifier, SIGKILL)
        throw BenchError("BookingService did not stop within 30 s of SIGTERM; see \(log)")
    }

    /// A loopback port nothing listens on (bound to port 0, then released).
    static func freePort() throws -> Int {
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

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
