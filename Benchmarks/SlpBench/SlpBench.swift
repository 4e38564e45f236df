import AccessTokens
import ArgumentParser
import BenchSupport
import Foundation
import GRDB
import Histogram
import RPCCore
import ServiceRuntime
import YediProto

/// SLP's matching as it runs: the real `AccountService` executable (found next to this one) with the
/// repository's app files, as a child process on a throwaway dev PKI, called over TLS.
///
///     swift build -c release --product AccountService && swift build -c release --product slp-bench
///     $(swift build -c release --show-bin-path)/slp-bench
///
/// Prints JSON lines: `SearchNearby` p50/p99 with 20,000 queued members spread over Seoul and 64
/// clients, accepts per second with 64 clients (each accept a distinct pending request, so each
/// is MATCHED: one write transaction pairing two members), and phone-code sends per second with the
/// development SMS sender (distinct numbers, the per-hour cap lifted in a copy of the app files).
///
/// The members, their profiles, queue entries, positions and requests are written into the stopped
/// service's database (its own schema from a first start); tokens are signed with the PKI's key.
@main
struct SlpBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "slp-bench", abstract: "SearchNearby p50/p99 and accepts/s against the AccountService process.")

    @Option(help: "The AccountService executable (default: next to this one).")
    var service: String?

    @OptionGroup var pkiOptions: PKIOptions

    @Option(help: "The app files (deploy/apps).")
    var apps = "deploy/apps"

    @Option(help: "Queued members spread over Seoul.")
    var members = 20_000

    @Option(help: "Pairs among them with a pending request, for the accepts.")
    var pairs = 5_000

    @Option(help: "Concurrent clients (each its own TLS connection).")
    var clients = 64

    @Option(help: "Seconds the search run lasts.")
    var seconds = 8.0

    @Flag(help: "Keep the temporary folder (PKI, data, the service's log).")
    var keep = false

    @Flag(help: "Only the SearchNearby run (for a profile of it).")
    var searchOnly = false

    /// Seoul, roughly: 37.45–37.65 N, 126.85–127.15 E (about 22 × 26 km).
    static let south = 37.45, north = 37.65, west = 126.85, east = 127.15

    func run() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent(
            "yedi-slp-bench-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: work) } }
        let pkiDirectory = try pkiOptions.folder(in: work)
        let data = work.appendingPathComponent("data").path
        let executable = try service ?? ServiceProcess.besideThisExecutable("AccountService")
        let nowhere = try ServiceProcess.freePort()
        // The code sends come from one address: the app file's per-address cap and the sign-in allowance
        // are lifted for the bench (a copy of the app files), so the figure is the send path's own.
        let benchApps = try Self.appsWithoutSendCaps(apps, in: work)
        let arguments =
            ["content", "booking", "chat"].flatMap { ["--peer", "\($0)=127.0.0.1:\(nowhere)"] }
            + [
                "--apps", benchApps, "--sign-in-rate-per-address", "1000000/1", "--sign-in-rate-per-connection",
                "1000000/1",
            ]
        var process = try await ServiceProcess.start(
            executable, name: "AccountService", pki: pkiDirectory, data: data,
            log: work.appendingPathComponent("service-1.log").path, arguments: arguments)
        try process.stop()
        try await seed(databasePath: data + "/account.sqlite")
        process = try await ServiceProcess.start(
            executable, name: "AccountService", pki: pkiDirectory, data: data,
            log: work.appendingPathComponent("service-2.log").path, arguments: arguments)
        defer { try? process.stop() }
        let issuer = AccessTokenIssuer(
            signingKey: try TokenSigningKey.load(pemFile: pkiDirectory + "/token-signing.key"),
            lifetime: .seconds(3_600))
        let tokens = try (0..<members).map {
            try issuer.issue(userID: Self.id($0), role: "member", sessionID: "s-\($0)", app: "slp").token
        }
        try await searches(process, tokens: tokens)
        if searchOnly { return }
        try await accepts(process, tokens: tokens)
        try await codeSends(process, sentSms: data + "/sent-sms")
    }

    /// `apps` copied into `work`, SLP's `phone_codes_per_hour` raised out of the way.
    static func appsWithoutSendCaps(_ apps: String, in work: URL) throws -> String {
        let folder = work.appendingPathComponent("apps")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: apps) where name.hasSuffix(".json") {
            var data = try Data(contentsOf: URL(fileURLWithPath: apps).appendingPathComponent(name))
            if name == "slp.json", var file = try JSONSerialization.jsonObject(with: data) as? [String: Any] {
                var limits = file["limits"] as? [String: Any] ?? [:]
                limits["phone_codes_per_hour"] = 100_000_000
                file["limits"] = limits
                data = try JSONSerialization.data(withJSONObject: file, options: [.prettyPrinted, .sortedKeys])
            }
            try data.write(to: folder.appendingPathComponent(name))
        }
        return folder.path
    }

    /// `StartPhoneVerification` to distinct numbers from every client for `seconds`: each call checks and
    /// counts the stored send limits, stores the code and queues its SMS in one write transaction; the
    /// outbox writes it to a development file after the answer.
    private func codeSends(_ process: ServiceProcess, sentSms: String) async throws {
        let next = PairCounter()
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        let start = ContinuousClock.now
        let histogram = try await withThrowingTaskGroup(of: Histogram<UInt64>.self) { group in
            for _ in 0..<clients {
                group.addTask {
                    try await withRPCClient(configuration: process.clientConfiguration()) { connection in
                        let identity = YediAccount.Identity.Client(connection)
                        var histogram = Figures.newHistogram()
                        while ContinuousClock.now < end, let number = await next.take(below: 99_999_999) {
                            let callStart = ContinuousClock.now
                            _ = try await identity.startPhoneVerification(
                                .init(phone: String(format: "010%08d", number)),
                                options: CallOptions(timeout: .seconds(30), metadata: ["yedi-app": "slp"]))
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
        try await Task.sleep(for: .seconds(2))
        let files = (try? FileManager.default.contentsOfDirectory(atPath: sentSms).count) ?? 0
        print(
            #"{"bench":"slp-code-sends","clients":\#(clients),"sends":\#(histogram.totalCount),"#
                + #""per_second":\#(Figures.format(Double(histogram.totalCount) / elapsed)),"#
                + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"#
                + #""sms_files_2s_later":\#(files),"sender":"development","tls":true}"#)
    }

    static func id(_ index: Int) -> String { String(format: "slp-bench-%06d", index) }

    /// Members 0..<2·pairs come in pairs (2i, 2i+1), the second having requested the first.
    private func seed(databasePath: String) async throws {
        let database = try DatabaseQueue(path: databasePath)
        defer { try? database.close() }
        var random = SplitMix64(seed: 28)
        func unit() -> Double { Double(random.next() % 1_000_000) / 1_000_000 }
        let points = (0..<members).map { _ in
            GeoPoint(
                latitude: Self.south + (Self.north - Self.south) * unit(),
                longitude: Self.west + (Self.east - Self.west) * unit())!
        }
        let tags = ["알고리즘", "토익", "자격증", "영어회화", "Swift", "수학"]
        let now = Int64(Date().timeIntervalSince1970 * 1_000)
        let index = NearbyIndex("slp_queue")
        try await database.write { [members, pairs] db in
            for member in 0..<members {
                let id = Self.id(member)
                try db.execute(
                    sql: """
                        INSERT INTO user (id, role, app, name, phone, gender, created_at_ms, nickname)
                        VALUES (?, 'member', 'slp', '', ?, ?, ?, ?)
                        """,
                    arguments: [id, String(format: "+8210%08d", member), 1 + member % 2, now, "새싹\(member)"])
                try db.execute(
                    sql: """
                        INSERT INTO slp_profile (user_id, gender, birth_year, birth_month, birth_day, email,
                            partner_min_age, partner_max_age, reputation, created_at_ms)
                        VALUES (?, ?, ?, 3, 4, ?, 17, 100, '0,0,0,0,0,0,0,0,0', ?)
                        """,
                    arguments: [id, 1 + member % 2, 1980 + member % 25, "\(id)@bench.slp", now])
                try db.execute(
                    sql: """
                        INSERT INTO slp_queue (user_id, latitude, longitude, studies, entered_at_ms)
                        VALUES (?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        id, points[member].latitude, points[member].longitude,
                        [tags[member % tags.count], tags[(member / 7) % tags.count]].joined(separator: "\n"), now,
                    ])
                try index.set(db.lastInsertedRowID, at: points[member], in: db)
            }
            for pair in 0..<min(pairs, members / 2) {
                try db.execute(
                    sql: "INSERT INTO slp_request (from_id, to_id, created_at_ms) VALUES (?, ?, ?)",
                    arguments: [Self.id(2 * pair + 1), Self.id(2 * pair), now])
            }
        }
    }

    /// Each client searches around random Seoul points as a random member, one call at a time.
    private func searches(_ process: ServiceProcess, tokens: [String]) async throws {
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        let start = ContinuousClock.now
        let cpuBefore = try process.cpuSeconds()
        let (histogram, people) = try await withThrowingTaskGroup(of: (Histogram<UInt64>, Int).self) { group in
            for client in 0..<clients {
                group.addTask {
                    try await withRPCClient(configuration: process.clientConfiguration()) { connection in
                        let matching = YediSlp.Matching.Client(connection)
                        var random = SplitMix64(seed: UInt64(client) + 1)
                        var histogram = Figures.newHistogram()
                        var people = 0
                        while ContinuousClock.now < end {
                            let token = tokens[Int(random.next() % UInt64(tokens.count))]
                            let latitude =
                                Self.south + (Self.north - Self.south) * Double(random.next() % 10_000) / 10_000
                            let longitude =
                                Self.west + (Self.east - Self.west) * Double(random.next() % 10_000) / 10_000
                            let callStart = ContinuousClock.now
                            let answer = try await matching.searchNearby(
                                .init(latitude: latitude, longitude: longitude),
                                options: CallOptions(
                                    timeout: .seconds(30), metadata: ["authorization": "Bearer \(token)"]))
                            histogram.record(Figures.nanoseconds(ContinuousClock.now - callStart))
                            people += answer.people.count
                        }
                        return (histogram, people)
                    }
                }
            }
            var merged = Figures.newHistogram()
            var people = 0
            for try await (histogram, found) in group {
                merged.add(histogram)
                people += found
            }
            return (merged, people)
        }
        let elapsed = Figures.seconds(ContinuousClock.now - start)
        // The service's CPU per search (its process alone: the bench's TLS client is not in it).
        let cpuPerCall = (try process.cpuSeconds() - cpuBefore) / Double(max(1, histogram.totalCount))
        print(
            #"{"bench":"slp-search-nearby","queued":\#(members),"clients":\#(clients),"searches":\#(histogram.totalCount),"#
                + #""per_second":\#(Figures.format(Double(histogram.totalCount) / elapsed)),"#
                + #""service_cpu_us_per_call":\#(Figures.format(cpuPerCall * 1e6)),"#
                + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"#
                + #""mean_people":\#(Figures.format(Double(people) / Double(max(1, histogram.totalCount)))),"tls":true}"#
        )
    }

    /// The pairs' accepts, shared out among the clients: each client takes the next pair.
    private func accepts(_ process: ServiceProcess, tokens: [String]) async throws {
        let count = min(pairs, members / 2)
        let next = PairCounter()
        let start = ContinuousClock.now
        let (histogram, matched) = try await withThrowingTaskGroup(of: (Histogram<UInt64>, Int).self) { group in
            for _ in 0..<clients {
                group.addTask {
                    try await withRPCClient(configuration: process.clientConfiguration()) { connection in
                        let matching = YediSlp.Matching.Client(connection)
                        var histogram = Figures.newHistogram()
                        var matched = 0
                        while let pair = await next.take(below: count) {
                            let callStart = ContinuousClock.now
                            let answer = try await matching.accept(
                                .init(otherID: Self.id(2 * pair + 1)),
                                options: CallOptions(
                                    timeout: .seconds(30), metadata: ["authorization": "Bearer \(tokens[2 * pair])"]))
                            histogram.record(Figures.nanoseconds(ContinuousClock.now - callStart))
                            if answer.outcome == .matched { matched += 1 }
                        }
                        return (histogram, matched)
                    }
                }
            }
            var merged = Figures.newHistogram()
            var matched = 0
            for try await (histogram, count) in group {
                merged.add(histogram)
                matched += count
            }
            return (merged, matched)
        }
        let elapsed = Figures.seconds(ContinuousClock.now - start)
        print(
            #"{"bench":"slp-accept","clients":\#(clients),"accepts":\#(histogram.totalCount),"matched":\#(matched),"#
                + #""per_second":\#(Figures.format(Double(histogram.totalCount) / elapsed)),"#
                + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"tls":true}"#)
    }
}

/// Hands out pair numbers once each.
actor PairCounter {
    private var next = 0

    func take(below limit: Int) -> Int? {
        guard next < limit else { return nil }
        defer { next += 1 }
        return next
    }
}
