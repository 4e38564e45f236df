import Foundation
import Logging
import RPCCore
import ServiceRuntime
import YediProto

#if canImport(Glibc)
    import Glibc
#endif

/// The real `ChatService` executable as a child process, on free loopback ports, its output in `log`.
struct ChatProcess: @unchecked Sendable {
    // @unchecked: `Process` is used for `terminate` and `isRunning` only, which Foundation locks.
    let port: Int
    let pki: String
    let log: String
    private let process: Process

    static func besideThisExecutable() throws -> String {
        let own = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let path = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("ChatService").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchError("\(path) is missing: swift build -c release --product ChatService (or pass --service)")
        }
        return path
    }

    /// Starts the service (AccountService at `accountPort`; Content and Booking nowhere: the bench sends
    /// text only) and waits until its health check answers SERVING.
    static func start(_ executable: String, pki: String, data: String, accountPort: Int, log: String) async throws
        -> ChatProcess
    {
        let port = try freePort()
        let nowhere = try freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "--pki", pki, "--data", data, "--port", "\(port)", "--metrics-port", "\(try freePort())",
            "--log-level", "warning", "--peer", "account=127.0.0.1:\(accountPort)",
            "--peer", "content=127.0.0.1:\(nowhere)", "--peer", "booking=127.0.0.1:\(nowhere)",
        ]
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let running = ChatProcess(port: port, pki: pki, log: log, process: process)
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            guard process.isRunning else { throw BenchError("ChatService exited at start; see \(log)") }
            if await running.isServing() { return running }
            try await Task.sleep(for: .milliseconds(100))
        }
        try? running.stop()
        throw BenchError("ChatService did not become SERVING in 60 s; see \(log)")
    }

    func clientConfiguration() -> ClientConfiguration {
        var logger = Logger(label: "chat-bench")
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

    /// SIGTERM, then waits for the process to exit.
    func stop() throws {
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<600 {
            if !process.isRunning { return }
            usleep(50_000)
        }
        kill(process.processIdentifier, SIGKILL)
        throw BenchError("ChatService did not stop within 30 s of SIGTERM; see \(log)")
    }

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

/// AccountService's `BatchGetUsers` for the bench: every id is a designer named after it. It presents
/// the PKI's `account` certificate, so ChatService's peer client accepts it.
struct FakeAccount {
    let server: RPCServer
    let task: Task<Void, any Error>
    let port: Int

    static func start(pki: String) async throws -> FakeAccount {
        let methods = RPCMethodSet(YediAccount.AccountService.descriptor) { router in
            router.register(YediAccount.AccountService.Method.batchGetUsers) { request, _ in
                .init(users: request.userIDs.map { .init(id: $0, role: .designer, name: "디자이너 \($0)") })
            }
        }
        var logger = Logger(label: "chat-bench.account")
        logger.logLevel = .error
        let server = try RPCServer(
            configuration: ServerConfiguration(
                host: "127.0.0.1", port: 0,
                tls: .server(
                    certificateChainFile: pki + "/account.pem", privateKeyFile: pki + "/account.key",
                    trustRootsFile: pki + "/ca.pem", clientCertificateVerification: .optional)),
            services: [methods], logger: logger)
        let task = Task { try await server.run() }
        guard let port = try await server.listeningAddress().port else { throw BenchError("no port") }
        return FakeAccount(server: server, task: task, port: port)
    }

    func stop() { server.beginGracefulShutdown() }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
