import Logging
import NIOCore
import RPCCore
import RPCTLS
import YediProto

/// An `RPCServer` on a free loopback port, running in a task until `stop()`.
public struct RunningServer: Sendable {
    public let server: RPCServer
    public let task: Task<Void, any Error>
    public let port: Int

    public static func start(
        pki: TestPKI,
        services: [any RPCService],
        interceptors: [any ServerInterceptor] = [],
        clientCertificates: TLSConfiguration.ClientCertificateVerification = .optional,
        port: Int = 0,
        logger: Logger = Logger(label: "test.server"),
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> RunningServer {
        var configuration = ServerConfiguration(
            host: "127.0.0.1",
            port: port,
            tls: pki.serverConfiguration("account", clientCertificates: clientCertificates)
        )
        configure(&configuration)
        let server = try RPCServer(
            configuration: configuration,
            services: services,
            interceptors: interceptors,
            logger: logger
        )
        let task = Task { try await server.run() }
        let address = try await server.listeningAddress()
        return RunningServer(server: server, task: task, port: address.port!)
    }

    /// Graceful shutdown, then waits for `run()` to return.
    public func stop() async {
        server.beginGracefulShutdown()
        _ = await task.result
    }
}

extension TestPKI {
    /// A client of loopback `ports`, trusting the dev CA, with the probe's certificate unless told otherwise.
    public func rpcClientConfiguration(
        ports: [Int],
        identity: String? = "yedi-probe",
        configure: (inout ClientConfiguration) -> Void = { _ in }
    ) -> ClientConfiguration {
        var configuration = ClientConfiguration(
            targets: ports.map { .init(host: "127.0.0.1", port: $0) },
            tls: clientConfiguration(identity: identity),
            serverName: "localhost",
            logger: Logger(label: "test.client")
        )
        configure(&configuration)
        return configuration
    }
}
