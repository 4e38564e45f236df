import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import RPCTLS

/// Leak soak for the TLS layer: many sequential connect–handshake–echo–close cycles against an
/// in-process TLS server, printing the process's memory as it goes. After warm-up, resident memory
/// must stay flat and OpenSSL's live allocation count must return exactly to its warm-up value.
@main
struct TLSSoak: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tls-soak",
        abstract: "Connect-handshake-close TLS cycles against an in-process server, reporting memory."
    )

    @Option(help: "Total cycles.")
    var cycles = 10_000

    @Option(help: "Cycles before the baseline is taken.")
    var warmup = 1_000

    @Option(help: "Print a row every this many cycles.")
    var every = 1_000

    @Option(help: "Dev PKI directory (make it with deploy/dev-pki.sh).")
    var pki = "deploy/pki"

    @Flag(inversion: .prefixedNo, help: "Mutual TLS (client presents the booking service certificate).")
    var mutual = true

    mutating func validate() throws {
        guard self.cycles > 0, self.warmup >= 0, self.warmup < self.cycles, self.every > 0 else {
            throw ValidationError("need cycles > warmup >= 0 and every > 0")
        }
        guard FileManager.default.fileExists(atPath: "\(self.pki)/ca.pem") else {
            throw ValidationError("no PKI in '\(self.pki)': run deploy/dev-pki.sh \(self.pki) first")
        }
    }

    func run() throws {
        guard OpenSSLAllocationCounter.install() else {
            throw SoakCycleFailed(description: "OpenSSL allocated before the counter was installed")
        }
        let serverGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer {
            try? clientGroup.syncShutdownGracefully()
            try? serverGroup.syncShutdownGracefully()
        }
        let server = try SoakServer(group: serverGroup, context: TLSContext(configuration: self.serverConfiguration))
        let clientContext = try TLSContext(configuration: self.clientConfiguration)
        let payload = ByteBuffer(repeating: 0x5A, count: 64)

        print(
            "tls-soak: \(self.cycles) cycles (warm-up \(self.warmup)), mutual TLS \(self.mutual), port \(server.port)")
        print("server and clients share this process; memory figures are the whole process")
        print(Row.header)
        let start = Date()
        let before = MemorySnapshot.now()
        print(Row(cycles: 0, memory: before, seconds: 0))
        var baseline = before

        for cycle in 1...self.cycles {
            try SoakClient.cycle(group: clientGroup, port: server.port, context: clientContext, payload: payload)
            if cycle % self.every == 0 || cycle == self.warmup || cycle == self.cycles {
                try Self.waitUntilServerIsIdle(server)
                let snapshot = MemorySnapshot.now()
                print(Row(cycles: cycle, memory: snapshot, seconds: Date().timeIntervalSince(start)))
                if cycle == self.warmup { baseline = snapshot }
            }
        }
        let after = MemorySnapshot.now()
        try server.close()

        let rssGrowth = after.residentKiB - baseline.residentKiB
        let blockGrowth = after.openSSLLiveBlocks - baseline.openSSLLiveBlocks
        print("")
        print("VmRSS before:           \(before.residentKiB) KiB")
        print("VmRSS after warm-up:    \(baseline.residentKiB) KiB  (at cycle \(self.warmup))")
        let sinceWarmup = "\(Self.signed(rssGrowth)) KiB since warm-up"
        print("VmRSS after:            \(after.residentKiB) KiB  (at cycle \(self.cycles), \(sinceWarmup))")
        let blocks = "\(baseline.openSSLLiveBlocks) after warm-up, \(after.openSSLLiveBlocks) after"
        print("OpenSSL live blocks:    \(blocks) (\(Self.signed(blockGrowth)))")
        print("server TLS failures:    \(server.failureCount)")
        let flat = blockGrowth == 0 && rssGrowth < 1024 && server.failureCount == 0
        print(flat ? "verdict: FLAT (no leak)" : "verdict: GROWING or FAILING")
        if !flat { throw ExitCode(1) }
    }

    private var serverConfiguration: TLSConfiguration {
        .server(
            certificateChainFile: "\(self.pki)/account.pem",
            privateKeyFile: "\(self.pki)/account.key",
            trustRootsFile: "\(self.pki)/ca.pem",
            clientCertificateVerification: self.mutual ? .required : .none
        )
    }

    private var clientConfiguration: TLSConfiguration {
        .client(
            trustRootsFile: "\(self.pki)/ca.pem",
            certificateChainFile: self.mutual ? "\(self.pki)/booking.pem" : nil,
            privateKeyFile: self.mutual ? "\(self.pki)/booking.key" : nil
        )
    }

    /// The client is done once its channel closed; the server's side may trail by a moment.
    private static func waitUntilServerIsIdle(_ server: SoakServer) throws {
        let deadline = Date().addingTimeInterval(10)
        while server.open > 0 {
            guard Date() < deadline else { throw SoakCycleFailed(description: "server connections never closed") }
            Thread.sleep(forTimeInterval: 0.001)
        }
    }

    private static func signed(_ value: Int) -> String { value >= 0 ? "+\(value)" : "\(value)" }
}

/// One line of the progress table.
private struct Row: CustomStringConvertible {
    static let header = "  cycles   VmRSS KiB   OpenSSL live blocks   seconds"

    var cycles: Int
    var memory: MemorySnapshot
    var seconds: Double

    var description: String {
        func pad(_ value: Any, _ width: Int) -> String {
            let text = "\(value)"
            return String(repeating: " ", count: max(0, width - text.count)) + text
        }
        return pad(self.cycles, 8) + pad(self.memory.residentKiB, 12) + pad(self.memory.openSSLLiveBlocks, 22)
            + pad(String(format: "%.1f", self.seconds), 10)
    }
}
