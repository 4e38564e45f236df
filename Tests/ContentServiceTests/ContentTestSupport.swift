import Foundation
import GRDB
import NIOConcurrencyHelpers
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediCrypto
import YediProto

@testable import AccountService
@testable import ContentService

/// ContentService in this process (real TLS, database, access rules) with the real AccountService as its
/// account peer and a fake BookingService whose reservations the test writes. Both services share one
/// `ManualClock` (set to the real time, so the fake peer's token checks agree).
final class ContentFixture: @unchecked Sendable {
    // @unchecked: RunningServer (the fake booking peer) is a plain struct of Sendable parts, only stopped.
    let harness: ServiceHarness
    let account: RunningService
    let content: RunningService
    let booking: RunningServer
    let clock: ManualClock
    let accountClient: RPCClient
    let contentClient: RPCClient
    let hooks: TestHooks
    private let tasks: [Task<Void, Never>]

    var accounts: YediAccount.AccountService.Client { YediAccount.AccountService.Client(accountClient) }
    var api: YediContent.ContentService.Client { YediContent.ContentService.Client(contentClient) }
    /// The reservations the fake BookingService knows.
    var reservations: LockedValue<[String: YediBooking.Reservation]> { hooks.reservations }

    /// `quotas`: `--quota` entries for ContentService (`posts.day=2`); `apps`: the folder of app files both
    /// services serve (YeDi alone, without operators, when nil).
    /// `database` and `shared` (the log and image URL key files every replica is given): ContentService on
    /// PostgreSQL (`ContentServiceOnPostgresTests`).
    static func start(
        imageCacheItems: Int = 50, quotas: [String] = [], apps: String? = nil, database: DatabaseSettings = .sqlite,
        shared: (logKey: String, imageURLKey: String)? = nil
    ) async throws -> ContentFixture {
        let harness = try ServiceHarness()
        let clock = ManualClock(Date())
        let hooks = TestHooks()
        let booking = try await harness.startFakePeer(
            "booking",
            services: [
                RPCMethodSet(YediBooking.BookingService.descriptor) { router in
                    router.register(YediBooking.BookingService.Method.getReservation) { request, context in
                        guard case .service("content") = context.caller else {
                            throw RPCError(code: .permissionDenied, message: "content only")
                        }
                        guard let reservation = hooks.reservations.value[request.reservationID] else {
                            throw RPCError(code: .notFound, message: "no such reservation")
                        }
                        return reservation
                    }
                }
            ])
        // AccountService must know ContentService's port before ContentService runs (it asks it for review
        // summaries), so the port is picked first; if something takes it before ContentService binds it
        // (the start refuses with "already in use"), both start again on another.
        var attempt = 0
        var started: (account: RunningService, content: RunningService)?
        while started == nil {
            attempt += 1
            let contentPort = try ServiceHarness.unusedPort()
            let account = try await harness.start(
                TestAccountDefinition.self,
                configuration: try harness.configuration(
                    AccountServiceDefinition.defaults,
                    peers: [
                        "content": contentPort, "booking": booking.port, "chat": try ServiceHarness.unusedPort(),
                    ]
                ) { $0.apps = apps },
                clock: clock)
            var configuration = try harness.configuration(
                ContentServiceDefinition.defaults, port: contentPort,
                peers: ["account": try await account.port, "booking": booking.port]
            ) { options in
                options.imageCacheItems = "\(imageCacheItems)"
                options.quotas = quotas
                options.apps = apps
                options.imageUrlKey = shared?.imageURLKey
            }
            configuration.database = database
            configuration.logKeyFile = shared?.logKey
            TestContentDefinition.register(hooks, for: configuration.dataDirectory)
            do {
                let content = try await harness.start(
                    TestContentDefinition.self, configuration: configuration, clock: clock)
                started = (account, content)
            } catch  where attempt < 3 && "\(error)".contains("already in use") {
                // A StartupError for the RPC port, or NIO's bind error for the image port: either way
                // another process took a port between its choice and the bind.
                try await account.stop()
            }
        }
        let (account, content) = started!
        let accountClient = try RPCClient(configuration: harness.clientConfiguration(port: try await account.port))
        var contentConfiguration = harness.clientConfiguration(port: try await content.port)
        contentConfiguration.limits = WireLimits(maxFrameBytes: 11 << 20)
        let contentClient = try RPCClient(configuration: contentConfiguration)
        return ContentFixture(
            harness: harness, account: account, content: content, booking: booking, clock: clock,
            accountClient: accountClient, contentClient: contentClient, hooks: hooks)
    }

    private init(
        harness: ServiceHarness, account: RunningService, content: RunningService, booking: RunningServer,
        clock: ManualClock, accountClient: RPCClient, contentClient: RPCClient, hooks: TestHooks
    ) {
        self.harness = harness
        self.account = account
        self.content = content
        self.booking = booking
        self.clock = clock
        self.accountClient = accountClient
        self.contentClient = contentClient
        self.hooks = hooks
        self.tasks = [Task { await accountClient.run() }, Task { await contentClient.run() }]
    }

    func stop() async throws {
        accountClient.beginGracefulShutdown()
        contentClient.beginGracefulShutdown()
        for task in tasks { await task.value }
        try await content.stop()
        try await account.stop()
        await booking.stop()
    }

    /// The SQLite store under the running service, for checks behind the RPCs.
    var store: SQLiteContentStore {
        SQLiteContentStore(database: content.environment.database, outbox: content.environment.outbox)
    }
    var imageFolder: URL { content.environment.dataDirectory.appendingPathComponent("images") }
    var variantFolder: URL { content.environment.dataDirectory.appendingPathComponent("image-variants") }

    /// `https://127.0.0.1:<port>` of the image port, once it has bound the port the system picked.
    func imageBase() async throws -> String {
        _ = try await eventually(timeout: 10) { !(hooks.urls.value?.baseURL ?? "").isEmpty }
        return try XCTUnwrap(hooks.urls.value?.baseURL)
    }

    func options(_ token: String) -> CallOptions { ServiceHarness.bearer(token) }

    /// Runs `body` with a client presenting service `identity`'s certificate ("account", "chat").
    func asService<T: Sendable>(
        _ identity: String, _ body: (YediContent.ContentService.Client) async throws -> T
    ) async throws -> T {
        let configuration = harness.clientConfiguration(port: try await content.port, identity: identity)
        return try await withRPCClient(configuration: configuration) { client in
            try await body(YediContent.ContentService.Client(client))
        }
    }

    // MARK: People and things

    struct Person {
        var id: String
        var token: String
        var options: CallOptions { ServiceHarness.bearer(token) }
    }

    private let counter = NIOLockedValueBox(0)

    private func nextNumber() -> Int {
        counter.withLockedValue {
            $0 += 1
            return $0
        }
    }

    func designer(_ name: String = "박지호") async throws -> Person {
        let number = nextNumber()
        var request = SampleAccounts.designer("designer\(number)@example.com", name: name)
        request.designer?.shop?.name = "살롱 \(number)"
        let answer = try await accounts.signUpCompletely(request, accountData: account.environment.dataDirectory)
        return Person(id: answer.user!.id, token: answer.session!.accessToken)
    }

    func customer(_ name: String = "김민지") async throws -> Person {
        var request = SampleAccounts.customer("customer\(nextNumber())@example.com")
        request.name = name
        let answer = try await accounts.signUpCompletely(request, accountData: account.environment.dataDirectory)
        return Person(id: answer.user!.id, token: answer.session!.accessToken)
    }

    func upload(_ person: Person, _ bytes: [UInt8]? = nil) async throws -> YediCommon.ImageRef {
        try await api.uploadImage(
            .init(data: bytes ?? SampleImages.png(width: 4, height: 3, seed: UInt8(nextNumber() % 250))),
            options: person.options)
    }

    func post(
        _ designer: Person, title: String = "레이어드컷", category: YediCommon.HairCategory = .cut
    ) async throws -> YediContent.Post {
        let photo = try await upload(designer)
        return try await api.createPost(
            .init(
                title: title, description: "손상이 적어요", priceKRW: 45_000, category: category,
                photoIDs: [photo.id]),
            options: designer.options)
    }

    /// A reservation the fake BookingService answers for: confirmed, started an hour ago by default.
    @discardableResult
    func reservation(
        _ id: String, customer: Person, designer: Person, startsIn seconds: TimeInterval = -3_600,
        status: YediBooking.ReservationStatus = .confirmed
    ) -> YediBooking.Reservation {
        let reservation = YediBooking.Reservation(
            id: id, customerID: customer.id, designerID: designer.id,
            startAtMs: Int64(((clock.now.timeIntervalSince1970 + seconds) * 1_000).rounded(.down)), status: status)
        reservations.withLock { $0[id] = reservation }
        return reservation
    }

    func review(
        _ reservationID: String, by customer: Person, score: Int32 = 5,
        keywords: [YediContent.ReviewKeyword] = [.kind]
    ) async throws -> YediContent.Review {
        let photo = try await upload(customer)
        return try await api.createReview(
            .init(reservationID: reservationID, score: score, text: "최고예요", photoIDs: [photo.id], keywords: keywords),
            options: customer.options)
    }
}

/// What a test can watch or change inside its ContentService: blob reads, author lookups, reservations.
final class TestHooks: Sendable {
    let blobs = LockedValue<CountingBlobStore?>(nil)
    let library = LockedValue<ImageLibrary?>(nil)
    let urls = LockedValue<ImageURLs?>(nil)
    let userLookups = LockedValue<[[String]]>([])
    let reservations = LockedValue<[String: YediBooking.Reservation]>([:])
}

/// A blob store that counts reads (file opens, or queries on PostgreSQL) on top of the real one.
final class CountingBlobStore: ImageBlobStore {
    let inner: any ImageBlobStore
    let reads = LockedValue(0)

    init(inner: any ImageBlobStore) { self.inner = inner }

    func write(_ bytes: [UInt8], sha256: String) async throws -> Bool { try await inner.write(bytes, sha256: sha256) }
    func read(sha256: String) async throws -> [UInt8]? {
        reads.withLock { $0 += 1 }
        return try await inner.read(sha256: sha256)
    }
    func exists(sha256: String) async throws -> Bool { try await inner.exists(sha256: sha256) }
    func delete(sha256: String) throws { try inner.delete(sha256: sha256) }
    func names() async throws -> [String] { try await inner.names() }
}

/// ContentService with the test's hooks (found by its data folder): a counting blob store and counted
/// author lookups around the real peers.
enum TestContentDefinition: ServiceDefinition {
    static let defaults = ContentServiceDefinition.defaults
    static let summary = ContentServiceDefinition.summary
    private static let registry = NIOLockedValueBox<[String: TestHooks]>([:])

    static func register(_ hooks: TestHooks, for dataDirectory: String) {
        registry.withLockedValue { $0[dataDirectory] = hooks }
    }

    static func migrate(_ migrator: inout DatabaseMigrator) {
        ContentServiceDefinition.migrate(&migrator)
    }
    static let postgresMigrations = ContentServiceDefinition.postgresMigrations

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        let hooks = registry.withLockedValue { $0[env.configuration.dataDirectory] } ?? TestHooks()
        let blobs = CountingBlobStore(inner: try ContentServiceDefinition.blobStores(env).originals)
        hooks.blobs.withLock { $0 = blobs }
        var peers = ContentPeers.live(env.peers)
        let users = peers.users
        peers.users = { ids in
            hooks.userLookups.withLock { $0.append(ids) }
            return try await users(ids)
        }
        let handlers = try await ContentServiceDefinition.handlers(env, blobs: blobs, peers: peers)
        hooks.library.withLock { $0 = handlers.images }
        hooks.urls.withLock { $0 = handlers.urls }
        return ContentServiceDefinition.services(handlers, env: env)
    }
}

/// AccountService with a cheap password hash (the production cost is for the bench, not tests).
enum TestAccountDefinition: ServiceDefinition {
    static let defaults = AccountServiceDefinition.defaults
    static let summary = AccountServiceDefinition.summary
    static let issuesTokens = true

    static func migrate(_ migrator: inout DatabaseMigrator) {
        AccountServiceDefinition.migrate(&migrator)
    }

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        AccountServiceDefinition.services(
            env,
            account: try await AccountServiceDefinition.handlers(
                env, passwords: PasswordHasher(parameters: .fastForTests)))
    }
}

/// Sign-up requests that pass every rule.
enum SampleAccounts {
    static func customer(_ email: String) -> YediAccount.SignUpRequest {
        YediAccount.SignUpRequest(
            email: email, password: "hair2024!", name: "김민지", phone: "010-1234-5678", gender: .female,
            birthDate: .init(year: 1995, month: 4, day: 12), role: .customer)
    }

    static func designer(_ email: String, name: String) -> YediAccount.SignUpRequest {
        YediAccount.SignUpRequest(
            email: email, password: "scissors99", name: name, phone: "01098765432", gender: .male,
            birthDate: .init(year: 1988, month: 11, day: 3), role: .designer,
            designer: .init(
                description: "펌 전문", skills: ["펌", "염색"], rank: .principal,
                shop: .init(
                    name: "살롱 드 서울", phone: "02-555-1234",
                    address: .init(city: "서울", district: "강남구 테헤란로", detail: "3층"),
                    latitude: 37.5, longitude: 127.03)))
    }
}
