import ArgumentParser
import Foundation
import Histogram
import Logging
import NIOCore
import NIOPosix
import RPCCore
import YediProto

/// C calls in flight over K connections, closed loop; 2 s warm-up, then a measured window; prints one
/// JSON line, as the anchors' clients do.
struct BenchClient: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "client", abstract: "Load an echo server.")

    @Option var host = "127.0.0.1"
    @Option var port = 50053
    @Option(help: "Trust roots (PEM).") var ca = "certs/cert.pem"
    @Option(name: .customLong("server-name"), help: "Name the server certificate must carry.")
    var serverName = "localhost"
    @Option(help: "Connections (K).") var conns = 4
    @Option(help: "Calls in flight (C).") var inflight = 64
    @Option(help: "Measured seconds.") var duration = 10.0
    @Option(help: "Warm-up seconds.") var warmup = 2.0
    @Option(help: "Payload bytes.") var payload = 64
    @Option(help: "Event-loop threads; each worker runs on its connection's loop.") var threads = 1
    @Option(help: "Send the access token in this file with every call (a server run with --auth user).")
    var tokenFile: String?

    func run() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        var logger = Logger(label: "echo-bench.client")
        logger.logLevel = .warning
        // As the anchors' clients: K clients of one connection each, worker i uses client i mod K, so the
        // replies of one read and the requests they trigger share a connection (and a flush).
        let configuration = ClientConfiguration(
            targets: [.init(host: host, port: port)],
            tls: .client(trustRootsFile: ca),
            serverName: serverName,
            connectionsPerTarget: 1,
            logger: logger
        )
        let clients = try (0..<conns).map { _ in try RPCClient(configuration: configuration, eventLoopGroup: group) }
        let request = YediEcho.EchoRequest(payload: [UInt8](repeating: 0x61, count: payload))
        let options = try Self.options(tokenFile: tokenFile)
        let warmupNanos = UInt64(warmup * 1e9)
        let durationNanos = UInt64(duration * 1e9)
        let executors = group.makeIterator().map { EventLoopExecutor($0) }
        let histogram = try await withThrowingTaskGroup(of: Histogram<UInt64>?.self) { group in
            for client in clients {
                group.addTask {
                    await client.run()
                    return nil
                }
            }
            // Every connection up (TLS handshake included) before the clock starts.
            for client in clients { _ = try await YediEcho.Echo.Client(client).echo(request, options: options) }
            let warmEnd = Self.now() + warmupNanos
            let end = warmEnd + durationNanos
            let merged = try await withThrowingTaskGroup(of: Histogram<UInt64>.self) { workers in
                for worker in 0..<inflight {
                    let echo = YediEcho.Echo.Client(clients[worker % conns])
                    // Workers run on the clients' event loop, so a reply resumes its caller without a
                    // thread hop.
                    workers.addTask(executorPreference: executors[worker % executors.count]) {
                        var histogram = Self.newHistogram()
                        while true {
                            let start = Self.now()
                            if start >= end { break }
                            let reply = try await echo.echo(request, options: options)
                            let finish = Self.now()
                            precondition(reply.payload == request.payload, "bad echo")
                            if finish >= warmEnd && finish < end { histogram.record(finish - start) }
                        }
                        return histogram
                    }
                }
                var merged = Self.newHistogram()
                for try await histogram in workers { merged.add(histogram) }
                return merged
            }
            for client in clients { client.beginGracefulShutdown() }
            try await group.waitForAll()
            return merged
        }
        try await group.shutdownGracefully()
        let rps = Double(histogram.totalCount) / (Double(durationNanos) / 1e9)
        print(
            "{\"impl\":\"yedi-rpccore\",\"rps\":\(Int(rps.rounded())),"
                + "\"p50_us\":\(Self.micros(histogram.valueAtPercentile(50))),"
                + "\"p99_us\":\(Self.micros(histogram.valueAtPercentile(99))),"
                + "\"p999_us\":\(Self.micros(histogram.valueAtPercentile(99.9))),"
                + "\"conns\":\(conns),\"inflight\":\(inflight),\"payload\":\(payload)}"
        )
    }

    /// Every call's options: the token from `tokenFile`, if given, as its `authorization`.
    static func options(tokenFile: String?) throws -> CallOptions {
        var options = CallOptions.defaults
        if let tokenFile {
            let token = try String(contentsOfFile: tokenFile, encoding: .utf8)
            options.metadata.add("authorization", "Bearer \(token)")
        }
        return options
    }

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    static func newHistogram() -> Histogram<UInt64> {
        Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    }

    static func micros(_ nanoseconds: UInt64) -> String { String((Double(nanoseconds) / 100).rounded() / 10) }
}
