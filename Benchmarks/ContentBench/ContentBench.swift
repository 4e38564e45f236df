import ArgumentParser
import BenchSupport
import Foundation
import Histogram
import RPCCore
import ServiceRuntime
import YediProto

/// ContentService as it runs: the real `ContentService` and `AccountService` executables (found next to
/// this one) as child processes on a throwaway dev PKI, ContentService calling AccountService over mutual
/// TLS for post authors, the bench calling ContentService over TLS.
///
///     swift build -c release --product ContentService --product AccountService   # (one at a time)
///     swift build -c release --product content-bench
///     $(swift build -c release --show-bin-path)/content-bench
///
/// Prints JSON lines:
/// - `feed-page`: GetFeed pages of 20 posts from `--designers` designers, p50/p99. ContentService runs with
///   `--text-cache-items 1`, so every page makes its one batched BatchGetUsers call to AccountService.
/// - `image-get`: GetImage of a ~200 KiB JPEG per second, one client, one call at a time. ContentService
///   runs with `--image-cache-items 1`: "warm" reads one image again and again (a cache hit each time),
///   "cold" alternates two images (each read evicts the other: a miss, a database read and a file read).
/// - `image-peak-memory`, `image-upload`, `image-url-get`: see `ImageVariantBench` (a second, fresh
///   ContentService: the peak RSS of a 20-megapixel upload, uploads/s with resizing, GETs/s over HTTPS).
/// - `failover` (`--postgres --replicas N --failover`, instead of the rest): a replica's death under likes
///   (ContentFailover.swift).
@main
struct ContentBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "content-bench",
        abstract: "Feed page p50/p99 with author lookups and image gets/s (warm and cold cache) against ContentService."
    )

    @OptionGroup var pkiOptions: PKIOptions

    @Option(help: "Designers (each a sign-up at the production password cost).")
    var designers = 10

    @Option(help: "Posts, spread over the designers.")
    var posts = 400

    @Option(help: "Feed pages measured.")
    var pages = 500

    @Option(help: "Seconds each image run lasts.")
    var imageSeconds = 5.0

    @Option(help: "Size of the photo read, in KiB.")
    var photoKiB = 200

    @Option(help: "Seconds the upload and the URL GET runs last.")
    var variantSeconds = 10.0

    @Option(help: "Clients uploading (each one call at a time).")
    var uploadClients = 4

    @Option(help: "Clients getting the image URL (each one request at a time, keep-alive).")
    var getClients = 8

    @Flag(help: "Only the image variant benches (skip the feed pages and GetImage).")
    var variantsOnly = false

    @Flag(help: "Keep the temporary folder (PKI, data, the services' logs).")
    var keep = false

    @Flag(
        help:
            "ContentService on PostgreSQL: a fresh database on the development server (deploy/postgres-dev.sh --test); feed pages and GetImage only."
    )
    var postgres = false

    @Option(help: "With --postgres --failover: ContentService processes on the one database.")
    var replicas = 1

    @OptionGroup var failoverOptions: FailoverOptions

    @Option(help: "With --failover: customers liking at once.")
    var failoverCustomers = 16

    /// The JSON field the feed and image lines carry: which engine ContentService stored in.
    var engineField: String { BenchPostgres.engineField(postgres: postgres) }

    func run() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent(
            "yedi-content-bench-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: work) } }
        guard replicas >= 1, replicas == 1 || failoverOptions.failover else {
            throw BenchError("--replicas above 1 is for --failover")
        }
        try failoverOptions.check(postgres: postgres, replicas: replicas)
        guard failoverCustomers >= 1 else { throw BenchError("--failover-customers must be 1 or more") }
        try await BenchPostgres.with(postgres) { database in
            if failoverOptions.failover, let database {
                try await measureFailover(in: work, database: database)
            } else {
                try await measure(in: work, database: database)
            }
        }
    }

    /// AccountService stays on SQLite: the feed's author lookups are the same call on either engine.
    private func measure(in work: URL, database: BenchPostgres?) async throws {
        let pkiDirectory = try pkiOptions.folder(in: work)
        let accountPort = try ServiceProcess.freePort()
        let contentPort = try ServiceProcess.freePort()
        let nowhere = try ServiceProcess.freePort()
        let account = try await ServiceProcess.start(
            try ServiceProcess.besideThisExecutable("AccountService"), name: "AccountService", port: accountPort,
            pki: pkiDirectory, data: work.appendingPathComponent("account").path,
            log: work.appendingPathComponent("account.log").path,
            arguments: [
                "--peer", "content=127.0.0.1:\(contentPort)", "--peer", "booking=127.0.0.1:\(nowhere)",
                "--peer", "chat=127.0.0.1:\(nowhere)",
                // The seeding signs up every designer on one connection: the limits on one client off.
                "--sign-in-rate-per-address", "1000000/60", "--sign-in-rate-per-connection", "1000000/60",
            ])
        defer { try? account.stop() }
        let content = try await Self.startContentService(
            work: work, pki: pkiDirectory, port: contentPort, folder: "content", accountPort: accountPort,
            arguments: [
                "--image-cache-items", "1", "--text-cache-items", "1", "--image-port",
                "\(try ServiceProcess.freePort())",
                // 400 posts over 10 designers in one day: the posts.day quota would stop the seeding.
                "--quota", "posts.day=1000000",
            ]
                + (database.map {
                    $0.replicaArguments(sharingKeysIn: work)
                        // Image URLs signed by one replica are served by the others: a PostgreSQL start requires it.
                        + ["--image-url-key", BenchPostgres.keyFile(named: "image-url.key", in: work)]
                } ?? []))
        defer { try? content.stop() }

        let tokens = try await signUpDesigners(account)
        if variantsOnly {
            try await ImageVariantBench(bench: self, work: work, pki: pkiDirectory, accountPort: accountPort)
                .run(token: tokens[0])
            return
        }
        try await withRPCClient(configuration: content.clientConfiguration(maxFrameBytes: 11 << 20)) { client in
            let api = YediContent.ContentService.Client(client)
            try await seedPosts(api, tokens: tokens)
            try await feedPages(api)
            try await imageGets(api, token: tokens[0])
        }
        // Resizing, peak memory and the HTTPS GETs do not touch the database.
        guard database == nil else { return }
        try await ImageVariantBench(bench: self, work: work, pki: pkiDirectory, accountPort: accountPort)
            .run(token: tokens[0])
    }

    /// The `ContentService` executable beside this one, data in `<work>/<folder>`, AccountService its
    /// peer and BookingService nowhere.
    static func startContentService(
        work: URL, pki: String, port: Int? = nil, folder: String, accountPort: Int, arguments: [String]
    ) async throws -> ServiceProcess {
        try await ServiceProcess.start(
            try ServiceProcess.besideThisExecutable("ContentService"), name: "ContentService", port: port, pki: pki,
            data: work.appendingPathComponent(folder).path, log: work.appendingPathComponent("\(folder).log").path,
            arguments: [
                "--peer", "account=127.0.0.1:\(accountPort)", "--peer",
                "booking=127.0.0.1:\(try ServiceProcess.freePort())",
            ] + arguments)
    }

    // MARK: Seeding

    private func signUpDesigners(_ account: ServiceProcess) async throws -> [String] {
        try await withRPCClient(configuration: account.clientConfiguration()) { client in
            let accounts = YediAccount.AccountService.Client(client)
            var tokens: [String] = []
            for index in 0..<designers {
                let answer = try await accounts.signUpCompletely(
                    .init(
                        email: "bench-designer-\(index)@example.com", password: "bench-password-1",
                        name: "디자이너 \(index)", phone: "01012345678", gender: .male,
                        birthDate: .init(year: 1990, month: 1, day: 2), role: .designer,
                        designer: .init(
                            description: "벤치", skills: ["컷"], rank: .designer,
                            shop: .init(
                                name: "살롱 \(index)", phone: "0255512345",
                                address: .init(city: "서울", district: "강남구", detail: "1층"), latitude: 37.5,
                                longitude: 127))),
                    accountData: URL(fileURLWithPath: account.data), options: CallOptions(timeout: .seconds(60)))
                tokens.append(answer.session?.accessToken ?? "")
            }
            return tokens
        }
    }

    private func seedPosts(_ api: YediContent.ContentService.Client, tokens: [String]) async throws {
        var photos: [String] = []
        for (index, token) in tokens.enumerated() {
            let ref = try await api.uploadImage(
                .init(data: BenchImages.jpeg(kib: 8, variant: UInt8(index % 250))), options: bearer(token))
            photos.append(ref.id)
        }
        for index in 0..<posts {
            let designer = index % tokens.count
            _ = try await api.createPost(
                .init(
                    title: "스타일 \(index)", description: "벤치 게시물", priceKRW: 45_000,
                    category: YediCommon.HairCategory(rawValue: Int32(1 + index % 4)), photoIDs: [photos[designer]]),
                options: bearer(tokens[designer]))
        }
    }

    // MARK: Measurements

    private func feedPages(_ api: YediContent.ContentService.Client) async throws {
        var histogram = Figures.newHistogram()
        var cursor = ""
        var authors = 0
        for index in 0..<(pages + 20) {
            let start = ContinuousClock.now
            let page = try await api.getFeed(
                .init(page: .init(cursor: cursor, limit: 20)), options: CallOptions(timeout: .seconds(30)))
            let elapsed = ContinuousClock.now - start
            if index >= 20 {  // the first ones warm connections and the database
                histogram.record(Figures.nanoseconds(elapsed))
                authors += Set(page.posts.map(\.designerID)).count
            }
            guard page.posts.allSatisfy({ !($0.author?.name ?? "").isEmpty }) else {
                throw BenchError("a feed page came without its authors: is AccountService reachable?")
            }
            cursor = page.page?.nextCursor ?? ""
        }
        print(
            #"{"bench":"feed-page",\#(engineField)"page_size":20,"pages":\#(histogram.totalCount),"posts":\#(posts),"#
                + #""designers":\#(designers),"authors_per_page":\#(Figures.format(Double(authors) / Double(pages))),"#
                + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"author_lookup":"every page","tls":true}"#
        )
    }

    private func imageGets(_ api: YediContent.ContentService.Client, token: String) async throws {
        let first = BenchImages.jpeg(kib: photoKiB, variant: 1)
        let second = BenchImages.jpeg(kib: photoKiB, variant: 2)
        let a = try await api.uploadImage(.init(data: first), options: bearer(token)).id
        let b = try await api.uploadImage(.init(data: second), options: bearer(token)).id
        for (cache, ids) in [("warm", [a]), ("cold", [a, b])] {
            var histogram = Figures.newHistogram()
            let start = ContinuousClock.now
            let end = start + .milliseconds(Int(imageSeconds * 1_000))
            var count = 0
            while ContinuousClock.now < end {
                let callStart = ContinuousClock.now
                let image = try await api.getImage(
                    .init(imageID: ids[count % ids.count]), options: CallOptions(timeout: .seconds(30)))
                histogram.record(Figures.nanoseconds(ContinuousClock.now - callStart))
                guard image.data.count == first.count else { throw BenchError("an image came back changed") }
                count += 1
            }
            let seconds = Figures.seconds(ContinuousClock.now - start)
            print(
                #"{"bench":"image-get",\#(engineField)"cache":"\#(cache)","bytes":\#(first.count),"gets":\#(count),"#
                    + #""per_second":\#(Figures.format(Double(count) / seconds)),"#
                    + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                    + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"tls":true}"#)
        }
    }

    // MARK: Figures

    private func bearer(_ token: String) -> CallOptions {
        CallOptions(timeout: .seconds(30), metadata: ["authorization": "Bearer \(token)"])
    }

    static func newHistogram() -> Histogram<UInt64> {
        Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        UInt64(max(0, duration.components.seconds)) * 1_000_000_000
            + UInt64(duration.components.attoseconds / 1_000_000_000)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func milliseconds(_ nanoseconds: UInt64) -> String { format(Double(nanoseconds) / 1e6) }

    static func format(_ value: Double) -> String { String(format: "%.2f", value) }
}

/// Baseline JPEGs of a chosen size: a flat grey 64×64 image whose bulk is comment segments (the service
/// reads only headers, so the bytes' content does not matter, only their amount).
enum BenchImages {
    static func jpeg(kib: Int, variant: UInt8) -> [UInt8] {
        var bytes: [UInt8] = [0xFF, 0xD8]
        var remaining = kib * 1_024
        while remaining > 0 {
            let size = min(remaining, 60_000)
            bytes += segment(0xFE, [UInt8](repeating: variant, count: size))
            remaining -= size
        }
        bytes += segment(0xDB, [0] + [UInt8](repeating: 1, count: 64))
        bytes += segment(0xC0, [8, 0, 64, 0, 64, 1, 1, 0x11, 0])
        bytes += segment(0xC4, [0x00, 1] + [UInt8](repeating: 0, count: 15) + [0])
        bytes += segment(0xC4, [0x10, 1] + [UInt8](repeating: 0, count: 15) + [0])
        bytes += segment(0xDA, [1, 1, 0x00, 0, 63, 0])
        bytes += [UInt8](repeating: 0, count: 16)  // 64 blocks of two zero bits
        return bytes + [0xFF, 0xD9]
    }

    private static func segment(_ marker: UInt8, _ data: [UInt8]) -> [UInt8] {
        [0xFF, marker, UInt8((data.count + 2) >> 8), UInt8((data.count + 2) & 0xFF)] + data
    }
}
