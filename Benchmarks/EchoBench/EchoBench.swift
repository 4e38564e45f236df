import ArgumentParser

/// The RPC core on the anchors' workload: 64-byte unary echoes over TLS 1.3.
///
///     swift run -c release echo-bench server --port 50053 --cert certs/cert.pem --key certs/key.pem
///     swift run -c release echo-bench client --port 50053 --ca certs/cert.pem --conns 4 --inflight 64
///
/// `bench/anchors-extra.sh` plugs both into ../shared/anchors/run-anchors.sh.
@main
struct EchoBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "echo-bench",
        abstract: "Unary echo load over RPCCore, flags as the anchors' (server and client).",
        subcommands: [BenchServer.self, BenchClient.self, FloorServer.self, FloorClient.self, TaskCost.self]
    )
}
