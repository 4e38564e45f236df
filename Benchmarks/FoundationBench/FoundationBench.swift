import AccessTokens
import ArgumentParser
import BenchSupport
import Foundation
import GRDB
import Logging
import PostgresNIO
import RPCCore
import ServiceRuntime
import YediCrypto

/// What every service pays for the foundation: verifying an access token, hashing a password at the
/// production cost, and a small write and read through a service's database (WAL, synchronous=FULL).
///
///     swift run -c release foundation-bench
///
/// `--postgres` also measures the same writes and reads through `ServicePostgres` (the runtime's
/// PostgreSQL engine, pool of 6) on a fresh database of the development server, and says the server's
/// `fsync` and `synchronous_commit` (start it without `--test` for durable commits). Then the cost of
/// `NOTIFY` on its own (`database-notify`): a notifying transaction takes a cluster-wide lock from its
/// commit until it ends, so concurrent notifying commits queue; one-row write transactions from 1 and from
/// 6 concurrent writers, with `pg_notify` in each and with a statement of the same shape that notifies
/// nothing, alternating, while a connection listens on the channel (as each ChatService replica does).
@main
struct FoundationBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "foundation-bench",
        abstract: "Token verifications/s (one core), password hash time, database writes and reads/s."
    )

    @Option(help: "Token verifications per round.")
    var verifications = 50_000

    @Option(help: "Password hashes measured.")
    var hashes = 5

    @Option(help: "Database write transactions (one row each).")
    var writes = 2_000

    @Option(help: "Database reads (one row by primary key each).")
    var reads = 20_000

    @Option(help: "Points in the nearby index (spread over greater Seoul).")
    var points = 100_000

    @Option(help: "Nearby queries (700 m, first page of 20).")
    var nearbyQueries = 2_000

    @Option(help: "Measured rounds; the median is reported.")
    var rounds = 3

    @Flag(help: "Also the database writes and reads on PostgreSQL (a fresh database on the development server).")
    var postgres = false

    func run() async throws {
        try await tokens()
        try await passwords()
        try await database()
        if postgres { try await BenchPostgres.with(true) { try await databaseOnPostgres($0!) } }
        try await nearby()
    }

    /// One core: the verifier is called in a loop on this thread.
    func tokens() async throws {
        let key = TokenSigningKey(privateKey: Ed25519PrivateKey.generate())
        let issuer = AccessTokenIssuer(signingKey: key)
        let token = try issuer.issue(userID: "01jbench0000000000000000", role: .customer, sessionID: "s-1").token
        let verifier = JWTVerifier(keys: [key.verificationKey])
        let perSecond = median(
            (0..<rounds).map { _ in
                let start = ContinuousClock.now
                for _ in 0..<verifications { _ = try? verifier.claims(of: token) }
                return Double(verifications) / seconds(since: start)
            })
        print(
            #"{"bench":"token-verify","per_second":\#(Int(perSecond)),"token_bytes":\#(token.utf8.count),"threads":1}"#)

        // The same token through the services' cache: one miss, then hits (a digest, a lookup, an expiry
        // check); and a miss each time (distinct tokens), which also hops off the calling executor.
        let cached = CachingTokenVerifier(verifier: verifier)
        var hits: [Double] = []
        for _ in 0..<rounds {
            let start = ContinuousClock.now
            for _ in 0..<verifications { _ = try await cached.claims(of: token) }
            hits.append(Double(verifications) / seconds(since: start))
        }
        let misses = try (0..<verifications).map { index in
            try issuer.issue(userID: "01jbench\(index)", role: .customer, sessionID: "s-1").token
        }
        var missRates: [Double] = []
        for _ in 0..<rounds {
            let fresh = CachingTokenVerifier(verifier: verifier, capacity: verifications + 1)
            let start = ContinuousClock.now
            for token in misses { _ = try await fresh.claims(of: token) }
            missRates.append(Double(verifications) / seconds(since: start))
        }
        let hitsPerSecond = median(hits)
        let missesPerSecond = median(missRates)
        print(
            #"{"bench":"token-cache","hits_per_second":\#(Int(hitsPerSecond)),"#
                + #""misses_per_second":\#(Int(missesPerSecond)),"threads":1}"#)
    }

    func passwords() async throws {
        let hasher = PasswordHasher()
        var times: [Double] = []
        var encoded = ""
        for _ in 0..<hashes {
            let start = ContinuousClock.now
            encoded = try await hasher.hash("correct horse battery staple 1")
            times.append(seconds(since: start) * 1_000)
        }
        let verifyStart = ContinuousClock.now
        let verified = try await hasher.verify("correct horse battery staple 1", against: encoded)
        precondition(verified, "the hash does not verify")
        let verifyMilliseconds = seconds(since: verifyStart) * 1_000
        // `$scrypt$ln=15,r=8,p=1$<salt>$<hash>`
        let fields = encoded.split(separator: "$").map(String.init)
        let kdf = fields.first ?? "?"
        let parameters = fields.count > 1 ? fields[1] : "?"
        print(
            #"{"bench":"password-hash","kdf":"\#(kdf)","parameters":"\#(parameters)","#
                + #""median_ms":\#(String(format: "%.1f", median(times))),"verify_ms":\#(String(format: "%.1f", verifyMilliseconds))}"#
        )
    }

    func database() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-foundation-bench-\(ProcessInfo.processInfo.processIdentifier)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try ServiceDatabase.open(
            directory: directory.path,
            name: "bench",
            migrations: { migrator in
                migrator.registerMigration("bench-1") { db in
                    try db.create(table: "item") { table in
                        table.primaryKey("id", .integer)
                        table.column("name", .text).notNull()
                    }
                }
            },
            logger: Logger(label: "bench")
        )
        let writeStart = ContinuousClock.now
        for index in 0..<writes {
            try await database.write { db in
                try db.execute(sql: "INSERT INTO item (id, name) VALUES (?, ?)", arguments: [index, "item \(index)"])
            }
        }
        let writesPerSecond = Double(writes) / seconds(since: writeStart)
        let readStart = ContinuousClock.now
        for index in 0..<reads {
            let id = index % writes
            _ = try await database.read { db in
                try String.fetchOne(db, sql: "SELECT name FROM item WHERE id = ?", arguments: [id])
            }
        }
        let readsPerSecond = Double(reads) / seconds(since: readStart)
        try database.close()
        print(
            #"{"bench":"database","engine":"sqlite","writes_per_second":\#(Int(writesPerSecond)),"reads_per_second":\#(Int(readsPerSecond)),"#
                + #""write_transactions":\#(writes),"reads":\#(reads),"journal":"wal","synchronous":"full"}"#
        )
    }

    /// The same one-row writes (each its own transaction) and reads by primary key through the runtime's
    /// PostgreSQL engine, one at a time from one task, as a handler makes them.
    func databaseOnPostgres(_ bench: BenchPostgres) async throws {
        let logger = Logger(label: "bench")
        let postgres = try ServicePostgres(settings: bench.settings, logger: logger)
        let runner = Task { await postgres.run() }
        defer { runner.cancel() }
        try await postgres.write { tx in
            try await tx.query("CREATE TABLE item (id bigint PRIMARY KEY, name text NOT NULL)")
        }
        let durability = try await postgres.read { connection in
            var settings: [String] = []
            for name in ["fsync", "synchronous_commit"] {
                let rows = try await connection.query(PostgresQuery(unsafeSQL: "SHOW \(name)"), logger: logger)
                for try await value in rows.decode(String.self) { settings.append(value) }
            }
            return settings
        }
        let writeStart = ContinuousClock.now
        for index in 0..<writes {
            let name = "item \(index)"
            try await postgres.write { tx in
                try await tx.query("INSERT INTO item (id, name) VALUES (\(index), \(name))")
            }
        }
        let writesPerSecond = Double(writes) / seconds(since: writeStart)
        let readStart = ContinuousClock.now
        for index in 0..<reads {
            let id = index % writes
            _ = try await postgres.read { connection in
                try await connection.query("SELECT name FROM item WHERE id = \(id)", logger: logger).collect().count
            }
        }
        let readsPerSecond = Double(reads) / seconds(since: readStart)
        print(
            #"{"bench":"database","engine":"postgresql","writes_per_second":\#(Int(writesPerSecond)),"#
                + #""reads_per_second":\#(Int(readsPerSecond)),"write_transactions":\#(writes),"reads":\#(reads),"#
                + #""fsync":"\#(durability.first ?? "?")","synchronous_commit":"\#(durability.last ?? "?")","pool":6}"#
        )
        try await notifyCost(postgres, bench: bench, logger: logger)
    }

    /// Write transactions per second by `writers` tasks, each inserting a row and then either notifying or
    /// running `SELECT length(…)` (the same round trip, no notification), for `writes` transactions in all.
    private func notifyCost(_ postgres: ServicePostgres, bench: BenchPostgres, logger: Logger) async throws {
        try await postgres.write { tx in
            try await tx.query("CREATE TABLE note (id bigserial PRIMARY KEY, payload text NOT NULL)")
        }
        let listener = try await bench.connect()
        try await listener.query("LISTEN bench_events", logger: logger)
        let writes = self.writes
        var figures: [String: [Int]] = [:]
        for writers in [1, 6] {
            for round in 0..<4 {
                let notify = round % 2 == 1
                let start = ContinuousClock.now
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<writers {
                        group.addTask {
                            for index in stride(from: writer, to: writes, by: writers) {
                                let payload = "user-\(index % 100):\(index)"
                                try await postgres.write { tx in
                                    try await tx.query("INSERT INTO note (payload) VALUES (\(payload))")
                                    if notify {
                                        try await tx.query("SELECT pg_notify('bench_events', \(payload))")
                                    } else {
                                        try await tx.query("SELECT length(\(payload))")
                                    }
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                figures["\(writers)-\(notify)", default: []].append(Int(Double(writes) / seconds(since: start)))
            }
        }
        try await listener.close()  // on an error, dropping the database ends it
        func pair(_ writers: Int, _ notify: Bool) -> String {
            "[" + (figures["\(writers)-\(notify)"] ?? []).map(String.init).joined(separator: ",") + "]"
        }
        print(
            #"{"bench":"database-notify","engine":"postgresql","write_transactions":\#(writes),"#
                + #""one_writer_per_second":{"plain":\#(pair(1, false)),"notify":\#(pair(1, true))},"#
                + #""six_writers_per_second":{"plain":\#(pair(6, false)),"notify":\#(pair(6, true))},"listening":1}"#)
    }

    /// `NearbyIndex` over `points` points in a 60 × 60 km square around Seoul (about 28 per km²), asked
    /// for the 20 nearest within 700 m of random centres in the square, each query one database read.
    func nearby() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-nearby-bench-\(ProcessInfo.processInfo.processIdentifier)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let index = NearbyIndex("bench_place")
        let database = try ServiceDatabase.open(
            directory: directory.path, name: "nearby",
            migrations: { migrator in migrator.registerMigration("bench-1") { db in try index.create(in: db) } },
            logger: Logger(label: "bench"))
        var random = SystemRandomNumberGenerator()
        func somewhere() -> GeoPoint {
            GeoPoint(
                latitude: 37.30 + Double.random(in: 0..<0.54, using: &random),
                longitude: 126.65 + Double.random(in: 0..<0.68, using: &random))!
        }
        let places = (0..<points).map { _ in somewhere() }
        try await database.write { db in
            for (id, place) in places.enumerated() { try index.set(Int64(id), at: place, in: db) }
        }
        var latencies: [Double] = []
        var found = 0
        for _ in 0..<nearbyQueries {
            let centre = somewhere()
            let start = ContinuousClock.now
            let hits = try await database.read { db in try index.within(700, of: centre, limit: 20, in: db) }
            latencies.append(seconds(since: start) * 1e6)
            found += hits.count
        }
        try database.close()
        latencies.sort()
        func percentile(_ p: Double) -> Int {
            Int(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))])
        }
        print(
            #"{"bench":"nearby","points":\#(points),"queries":\#(nearbyQueries),"radius_m":700,"limit":20,"#
                + #""p50_us":\#(percentile(0.5)),"p99_us":\#(percentile(0.99)),"#
                + #""mean_hits":\#(Double(found) / Double(max(1, nearbyQueries)))}"#
        )
    }

    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    private func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }
}
