import AccessTokens
import Foundation
import GRDB
import Logging
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// The stand-in AccountService's friendships (`Friends/CheckFriends`), or UNAVAILABLE while down.
final class ZipadooFriendBook: Sendable {
    private let state = LockedValue((pairs: Set<[String]>(), down: false))
    /// What BookingService asked AccountService to notify (`Notifications/Notify`), in order.
    let notified = LockedValue<[YediAccount.NotifyRequest]>([])

    func befriend(_ a: String, _ b: String) { state.withLock { _ = $0.pairs.insert([a, b].sorted()) } }

    var down: Bool {
        get { state.value.down }
        set { state.withLock { $0.down = newValue } }
    }

    func check(_ request: YediZipadoo.CheckFriendsRequest) throws -> YediZipadoo.CheckFriendsResponse {
        let (pairs, down) = state.value
        if down { throw RPCError(code: .unavailable, message: "account is down") }
        return .init(friendIDs: request.candidateIDs.filter { pairs.contains([request.userID, $0].sorted()) })
    }

    /// "account" serving only CheckFriends, over TLS with account's certificate; its token verifier
    /// knows Zipadoo (the on-behalf-of token of a member's call).
    func start(_ harness: ServiceHarness) async throws -> RunningServer {
        let pki = harness.pki
        var logger = Logger(label: "test.fake-account")
        logger.logLevel = .warning
        let verifier = JWTVerifier(
            keys: [
                try TokenVerificationKey.load(
                    pemFile: pki.devPKI.appendingPathComponent("token-signing.pub.pem").path)
            ],
            apps: [.yedi: [.customer, .designer], "zipadoo": ["member"]])
        return try await RunningServer.start(
            pki: pki,
            services: [
                RPCMethodSet(YediZipadoo.Friends.descriptor) { router in
                    router.register(YediZipadoo.Friends.Method.checkFriends) { request, _ in try self.check(request) }
                },
                RPCMethodSet(YediAccount.Notifications.descriptor) { router in
                    router.register(YediAccount.Notifications.Method.notify) { request, _ in
                        self.notified.withLock { $0.append(request) }
                        return YediAccount.NotifyResponse(applied: true)
                    }
                },
            ],
            interceptors: [AuthenticationInterceptor(verifier: verifier, servedApps: [.yedi, "zipadoo"])],
            clientCertificates: .optional, logger: logger
        ) { configuration in
            configuration.tls = pki.serverConfiguration("account", clientCertificates: .optional)
        }
    }
}

/// BookingService in this process with the repository's app files, on a manual clock, with a stand-in
/// AccountService for friendships, and a `Promises` client.
final class ZipadooPromiseFixture: @unchecked Sendable {
    static let repositoryApps = ServiceHarness.repositoryApps
    /// Seoul City Hall.
    static let cityHall = GeoPoint(latitude: 37.5665, longitude: 126.9780)!

    let harness: ServiceHarness
    let service: RunningService
    let clock: ManualClock
    let friends: ZipadooFriendBook
    let account: RunningServer
    let client: RPCClient
    private let clientTask: Task<Void, Never>

    var promises: YediZipadoo.Promises.Client { YediZipadoo.Promises.Client(client) }
    var database: ServiceDatabase { service.environment.database }

    /// On SQLite, or on the PostgreSQL `database` (with a log key, as every PostgreSQL start needs).
    static func start(clock: ManualClock = ManualClock(), database: PostgresSettings? = nil) async throws
        -> ZipadooPromiseFixture
    {
        let harness = try ServiceHarness()
        let friends = ZipadooFriendBook()
        let account = try await friends.start(harness)
        var configuration = try harness.configuration(
            BookingServiceDefinition.defaults, peers: ["account": account.port]
        ) { $0.apps = repositoryApps }
        if let database {
            let logKey = harness.dataRoot.appendingPathComponent("log.key")
            try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: logKey)
            configuration.database = .postgres(database)
            configuration.logKeyFile = logKey.path
        }
        let service = try await harness.start(BookingServiceDefinition.self, configuration: configuration, clock: clock)
        let client = try RPCClient(configuration: harness.clientConfiguration(port: try await service.port))
        return ZipadooPromiseFixture(
            harness: harness, service: service, clock: clock, friends: friends, account: account, client: client)
    }

    private init(
        harness: ServiceHarness, service: RunningService, clock: ManualClock, friends: ZipadooFriendBook,
        account: RunningServer, client: RPCClient
    ) {
        self.harness = harness
        self.service = service
        self.clock = clock
        self.friends = friends
        self.account = account
        self.client = client
        self.clientTask = Task { await client.run() }
    }

    func stop() async throws {
        client.beginGracefulShutdown()
        await clientTask.value
        try await service.stop()
        await account.stop()
    }

    /// A token of `user` in `app`, valid on the fixture's clock and on the system clock (the stand-in
    /// verifies the forwarded token).
    func member(_ user: String, app: AppID = "zipadoo", role: UserRole = "member") throws -> CallOptions {
        let issued = min(clock.now, Date())
        let until = max(clock.now, Date()).addingTimeInterval(400 * 86_400)
        return ServiceHarness.bearer(
            try harness.token(
                user: user, role: role, app: app, now: issued,
                lifetime: .seconds(Int64(until.timeIntervalSince(issued)))))
    }

    var now: Int64 { clock.nowMilliseconds }

    /// The point `metres` north of `point` along its meridian (exactly that great-circle distance).
    static func north(of point: GeoPoint, metres: Double) -> GeoPoint {
        GeoPoint(
            latitude: point.latitude + metres / GeoPoint.earthRadiusMetres * 180 / .pi, longitude: point.longitude)!
    }

    static let place = YediZipadoo.Place(
        name: "서울시청", address: "서울 중구 세종대로 110", latitude: cityHall.latitude, longitude: cityHall.longitude)

    func create(
        by creator: String, with participants: [String] = [], at: Int64, fee: Int32 = 100, title: String = "점심 약속"
    ) async throws -> YediZipadoo.Promise {
        for participant in participants { friends.befriend(creator, participant) }
        return try await promises.createPromise(
            .init(
                clientID: UUID().uuidString, title: title, atMs: at, place: Self.place, fee: fee,
                participantIDs: participants),
            options: try member(creator))
    }

    func report(_ user: String, _ promiseID: String, metres: Double) async throws -> YediZipadoo.ReportPositionResponse
    {
        let point = Self.north(of: Self.cityHall, metres: metres)
        return try await promises.reportPosition(
            .init(promiseID: promiseID, latitude: point.latitude, longitude: point.longitude), options: try member(user)
        )
    }

    func count(_ sql: String, _ arguments: StatementArguments = []) async throws -> Int {
        try await database.read { db in try Int.fetchOne(db, sql: sql, arguments: arguments) ?? 0 }
    }

    /// Waits until `sql` counts `expected` (the scheduler's worker runs on its own).
    func waitFor(_ sql: String, _ expected: Int, timeout: TimeInterval = 10) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try await count(sql) != expected {
            guard Date() < deadline else {
                XCTFail("\(sql) never reached \(expected) (now \(try await count(sql)))")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A client presenting service `name`'s certificate.
    func serviceClient(_ name: String) async throws -> (RPCClient, Task<Void, Never>) {
        let client = try RPCClient(
            configuration: harness.clientConfiguration(port: try await service.port, identity: name))
        return (client, Task { await client.run() })
    }

    /// The status code and message of a call (`.ok` and "" when it succeeded).
    static func status(_ call: () async throws -> some Any) async -> (StatusCode, String) {
        do {
            _ = try await call()
            return (.ok, "")
        } catch let error as RPCError {
            return (error.code, error.message)
        } catch {
            return (.unknown, "\(error)")
        }
    }
}
