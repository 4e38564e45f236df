import BenchSupport
import Logging
import RPCCore
import ServiceRuntime
import YediProto

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
