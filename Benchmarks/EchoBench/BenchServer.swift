import ArgumentParser
import Logging
import NIOPosix
import RPCCore
import YediProto

/// An RPC server hosting only the echo service, as the anchors' echo servers do.
struct BenchServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "server", abstract: "Serve yedi.echo.Echo.")

    @Option var host = "127.0.0.1"
    @Option var port = 50053
    @Option(help: "Certificate chain (PEM).") var cert = "certs/cert.pem"
    @Option(help: "Private key (PEM).") var key = "certs/key.pem"
    @Option(help: "Event-loop threads; handlers run on their connection's loop.") var threads = 1
    @Option(help: "Authenticate as the services do: 'anyone' (open Echo) or 'user' (Echo needs a token).")
    var auth: BenchAuthentication?
    @Option(help: "With --auth: where to write a user's token for clients (--token-file).")
    var tokenFile = "certs/bench-token"
    @OptionGroup var allocations: AllocationOptions

    func run() async throws {
        let window = allocations.window(label: "echo-bench server")
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        var logger = Logger(label: "echo-bench.server")
        logger.logLevel = .warning
        var services: [any RPCService] = [EchoService(window: window)]
        var interceptors: [any ServerInterceptor] = []
        if let auth {
            let (interceptor, service) = try auth.setUp(tokenFile: tokenFile, window: window)
            (services, interceptors) = ([service], [interceptor])
        }
        let server = try RPCServer(
            configuration: ServerConfiguration(
                host: host,
                port: port,
                tls: .server(certificateChainFile: cert, privateKeyFile: key),
                idleTimeout: .zero
            ),
            services: services,
            interceptors: interceptors,
            eventLoopGroup: group,
            logger: logger
        )
        try await server.run()
    }
}

/// Answers with the request's payload.
struct EchoService: YediEcho.Echo.ServiceProtocol {
    /// Counts the calls for `--count-allocations`.
    var window: AllocationWindow? = nil

    func echo(_ request: YediEcho.EchoRequest, context: ServerContext) async throws -> YediEcho.EchoResponse {
        window?.callAnswered()
        return YediEcho.EchoResponse(payload: request.payload)
    }

    func expand(
        _ request: YediEcho.ExpandRequest,
        writer: RPCWriter<YediEcho.EchoResponse>,
        context: ServerContext
    ) async throws {
        let payload = [UInt8](repeating: 0x61, count: Int(request.payloadSize))
        for sequence in 0..<request.count {
            try await writer.write(.init(payload: payload, sequence: sequence))
        }
    }
}
