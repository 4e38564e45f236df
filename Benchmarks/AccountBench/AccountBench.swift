import AccessTokens
import ArgumentParser
import BenchSupport
import Foundation
import GRDB
import Histogram
import Logging
import RPCCore
import ServiceRuntime
import YediCrypto
import YediProto

/// AccountService as it runs: the real `AccountService` executable (found next to this one) as a child
/// process on a throwaway dev PKI, called over TLS.
///
///     swift build -c release --product AccountService && swift build -c release --product account-bench
///     $(swift build -c release --show-bin-path)/account-bench
///
/// Prints JSON lines: sign-ins/s with 1 and 4 concurrent clients (bound by the production scrypt cost),
/// token verifications/s on one core, and designer search latency (p50/p99) over 10,000 designers with
/// Korean names, shops and districts.
///
/// The designers are written into the service's database before it starts (see `DesignerSeed`), because
/// seeding them through SignUp would cost 10,000 production password hashes (about half an hour here).
///
/// `--postgres` runs the same on PostgreSQL (docs/postgres.md): a fresh database on the development server
/// (`deploy/postgres-dev.sh --test`), migrated by the service's first start, seeded with the same rows.
/// `--failover` (PostgreSQL, 2 or more replicas) measures a replica's death under sign-ins instead
/// (AccountFailover.swift).
@main
struct AccountBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account-bench",
        abstract: "Sign-ins/s, token verifications/s and designer search p50/p99 against the AccountService process."
    )

    @Option(help: "The AccountService executable (default: next to this one).")
    var service: String?

    @OptionGroup var pkiOptions: PKIOptions

    @Option(help: "Designers seeded for the search benchmark.")
    var designers = 10_000

    @Option(help: "Concurrent sign-in clients, comma-separated.")
    var clients = "1,4"

    @Option(help: "Seconds each sign-in run lasts.")
    var signInSeconds = 6.0

    @Option(help: "Token verifications per round.")
    var verifications = 50_000

    @Option(help: "Measured token rounds; the median is reported.")
    var rounds = 3

    @Option(help: "Searches per query kind.")
    var searches = 300

    @Flag(help: "Keep the temporary folder (PKI, data, the service's log).")
    var keep = false

    @Flag(help: "On PostgreSQL: a fresh database on the development server (deploy/postgres-dev.sh --test).")
    var postgres = false

    @OptionGroup var failoverOptions: FailoverOptions

    @Option(help: "With --failover: AccountService processes on the one PostgreSQL database.")
    var replicas = 1

    @Option(
        help:
            "With --failover: customers signing in at once (all from one address: more than 2 per surviving replica meet the KDF queue's per-address bound)."
    )
    var failoverClients = 4

    /// The JSON field every line carries: which engine.
    var engineField: String { BenchPostgres.engineField(postgres: postgres) }

    func run() async throws {
        try failoverOptions.check(postgres: postgres, replicas: replicas)
        guard replicas == 1 || failoverOptions.failover else { throw BenchError("--replicas needs --failover") }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent(
            "yedi-account-bench-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: work) } }
        try await BenchPostgres.with(postgres) { try await measure(in: work, database: $0) }
    }

    private func measure(in work: URL, database: BenchPostgres?) async throws {
        let pkiDirectory = try pkiOptions.folder(in: work)
        let data = work.appendingPathComponent("data").path
        let executable = try service ?? ServiceProcess.besideThisExecutable("AccountService")

        // 1. Start once on an empty folder so the service creates its own schema, then stop it.
        // Peers on a port nothing listens on: the bench never reaches another system by accident.
        let nowhere = try ServiceProcess.freePort()
        // The sign-in figures are the service's throughput: the limits on one client (docs/account.md) off.
        let peers =
            ["content", "booking", "chat"].flatMap { ["--peer", "\($0)=127.0.0.1:\(nowhere)"] }
            + ["--sign-in-rate-per-address", "1000000/60", "--sign-in-rate-per-connection", "1000000/60"]
            + (database?.replicaArguments(sharingKeysIn: work) ?? [])
        var process = try await ServiceProcess.start(
            executable, name: "AccountService", pki: pkiDirectory, data: data,
            log: work.appendingPathComponent("service-1.log").path, arguments: peers)
        try process.stop()
        if failoverOptions.failover {
            try await measureFailover(in: work, pki: pkiDirectory, executable: executable, arguments: peers)
            return
        }
        // 2. Seed the designers into that schema, with the service stopped.
        let seed = try await DesignerSeed.write(
            count: designers, databasePath: data + "/account.sqlite", postgres: database)
        // 3. Start it again for the measurements.
        process = try await ServiceProcess.start(
            executable, name: "AccountService", pki: pkiDirectory, data: data,
            log: work.appendingPathComponent("service-2.log").path, arguments: peers)
        defer { try? process.stop() }

        let concurrency = clients.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        let token = try await signIns(process, concurrency: concurrency)
        try tokenVerifications(token, publicKey: pkiDirectory + "/token-signing.pub.pem")
        try await designerSearches(process, seed: seed)
    }

    // MARK: Sign-ins

    /// Sign-ins per second with each number of concurrent clients (each its own TLS connection and
    /// account). Returns an access token the service issued.
    private func signIns(_ process: ServiceProcess, concurrency: [Int]) async throws -> String {
        let most = concurrency.max() ?? 1
        let password = "bench-password-1"
        let emails = (0..<most).map { "bench-customer-\($0)@example.com" }
        let token = try await withRPCClient(configuration: process.clientConfiguration()) { client in
            let account = YediAccount.AccountService.Client(client)
            var token = ""
            for email in emails {
                let answer = try await account.signUpCompletely(
                    .init(
                        email: email, password: password, name: "벤치 고객", phone: "01012345678", gender: .female,
                        birthDate: .init(year: 1995, month: 4, day: 12), role: .customer),
                    accountData: URL(fileURLWithPath: process.data), options: CallOptions(timeout: .seconds(30)))
                token = answer.session?.accessToken ?? ""
            }
            return token
        }
        for clients in concurrency {
            let end = ContinuousClock.now + .milliseconds(Int(signInSeconds * 1_000))
            let start = ContinuousClock.now
            let histograms = try await withThrowingTaskGroup(of: Histogram<UInt64>.self) { group in
                for email in emails.prefix(clients) {
                    group.addTask {
                        try await withRPCClient(configuration: process.clientConfiguration()) { client in
                            let account = YediAccount.AccountService.Client(client)
                            var histogram = Figures.newHistogram()
                            while ContinuousClock.now < end {
                                let callStart = ContinuousClock.now
                                _ = try await account.signIn(
                                    .init(email: email, password: password),
                                    options: CallOptions(timeout: .seconds(30)))
                                histogram.record(Figures.nanoseconds(ContinuousClock.now - callStart))
                            }
                            return histogram
                        }
                    }
                }
                var merged = Figures.newHistogram()
                for try await histogram in group { merged.add(histogram) }
                return merged
            }
            let elapsed = Figures.seconds(ContinuousClock.now - start)
            print(
                #"{"bench":"sign-in",\#(engineField)"clients":\#(clients),"per_second":\#(Figures.format(Double(histograms.totalCount) / elapsed)),"#
                    + #""sign_ins":\#(histograms.totalCount),"p50_ms":\#(Figures.milliseconds(histograms.valueAtPercentile(50))),"#
                    + #""p99_ms":\#(Figures.milliseconds(histograms.valueAtPercentile(99))),"kdf":"scrypt ln=15,r=8,p=1","tls":true}"#
            )
        }
        return token
    }

    // MARK: Token verification

    /// One core: the verifier every service uses, with the key file the services are given, in a loop on
    /// this thread, on a token the running AccountService issued.
    private func tokenVerifications(_ token: String, publicKey: String) throws {
        let verifier = JWTVerifier(keys: [try TokenVerificationKey.load(pemFile: publicKey)])
        _ = try verifier.claims(of: token)
        var rates: [Double] = []
        for _ in 0..<rounds {
            let start = ContinuousClock.now
            for _ in 0..<verifications { _ = try? verifier.claims(of: token) }
            rates.append(Double(verifications) / Figures.seconds(ContinuousClock.now - start))
        }
        print(
            #"{"bench":"token-verify","per_second":\#(Int(rates.sorted()[rates.count / 2])),"#
                + #""token_bytes":\#(token.utf8.count),"threads":1,"issuer":"AccountService"}"#)
    }

    // MARK: Designer search

    /// Search latency from one client, one call at a time, per kind of query: a full name and a district
    /// (three characters or more: the trigram index), a two-character given name and a one-character family
    /// name (shorter than a trigram: a scan of the designers).
    private func designerSearches(_ process: ServiceProcess, seed: DesignerSeed) async throws {
        var random = SplitMix64(seed: 7)
        let kinds: [(String, () -> String)] = [
            ("full-name", { seed.names[Int(random.next() % UInt64(seed.names.count))] }),
            ("district", { DesignerSeed.districts[Int(random.next() % UInt64(DesignerSeed.districts.count))] }),
            ("given-name-2-chars", { String(seed.names[Int(random.next() % UInt64(seed.names.count))].dropFirst()) }),
            ("family-name-1-char", { DesignerSeed.families[Int(random.next() % 5)] }),
        ]
        try await withRPCClient(configuration: process.clientConfiguration()) { client in
            let account = YediAccount.AccountService.Client(client)
            for (kind, query) in kinds {
                var latencies: [Double] = []
                var hits = 0
                for index in 0..<(searches + 20) {
                    let text = query()
                    let start = ContinuousClock.now
                    let answer = try await account.searchDesigners(
                        .init(query: text), options: CallOptions(timeout: .seconds(30)))
                    let elapsed = Figures.seconds(ContinuousClock.now - start) * 1_000
                    if index >= 20 {  // the first ones warm the caches
                        latencies.append(elapsed)
                        hits += answer.designers.count
                    }
                }
                latencies.sort()
                let p50 = latencies[latencies.count / 2]
                let p99 = latencies[min(latencies.count - 1, Int((Double(latencies.count) * 0.99).rounded(.up)) - 1)]
                print(
                    #"{"bench":"designer-search",\#(engineField)"query":"\#(kind)","designers":\#(seed.names.count),"searches":\#(latencies.count),"#
                        + #""p50_ms":\#(Figures.format(p50)),"p99_ms":\#(Figures.format(p99)),"#
                        + #""mean_results_per_page":\#(Figures.format(Double(hits) / Double(latencies.count))),"tls":true}"#
                )
            }
        }
    }

}
