import Foundation
import GRDB
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// What the stand-in AccountService answers to GetShopHours (designers' hours, or UNAVAILABLE while down),
/// and the notifications BookingService asks it to deliver (`Notifications/Notify`).
final class ShopDirectory: Sendable {
    private let state = LockedValue((shops: [String: YediAccount.ShopHours](), down: false, calls: 0))
    let notified = LockedValue<[YediAccount.NotifyRequest]>([])

    func add(_ designerID: String, opening: Int32 = 9, closing: Int32 = 21, zone: String = "Asia/Seoul") {
        state.withLock {
            $0.shops[designerID] = .init(
                designerID: designerID, openingHour: opening, closingHour: closing, timeZone: zone)
        }
    }

    var down: Bool {
        get { state.value.down }
        set { state.withLock { $0.down = newValue } }
    }

    var calls: Int { state.value.calls }

    func answer(_ designerID: String) throws -> YediAccount.ShopHours {
        try state.withLock { state -> Result<YediAccount.ShopHours, RPCError> in
            state.calls += 1
            if state.down { return .failure(RPCError(code: .unavailable, message: "account is down")) }
            guard let hours = state.shops[designerID] else {
                return .failure(RPCError(code: .notFound, message: "no such designer"))
            }
            return .success(hours)
        }.get()
    }

    /// "account" serving only GetShopHours and Notify, over TLS with account's certificate and the real
    /// access rules.
    func start(_ harness: ServiceHarness) async throws -> RunningServer {
        try await harness.startFakePeer(
            "account",
            services: [
                RPCMethodSet(YediAccount.AccountService.descriptor) { router in
                    router.register(YediAccount.AccountService.Method.getShopHours) { request, _ in
                        try self.answer(request.designerID)
                    }
                },
                RPCMethodSet(YediAccount.Notifications.descriptor) { router in
                    router.register(YediAccount.Notifications.Method.notify) { request, _ in
                        self.notified.withLock { $0.append(request) }
                        return YediAccount.NotifyResponse(applied: true)
                    }
                },
            ])
    }
}

/// BookingService running in this process (real TLS, real database, the runner's access rules) with a
/// fixed clock, a stand-in AccountService for shop hours, and a client.
///
/// @unchecked: `RunningServer` is not marked Sendable; the fixture only reads it and stops it once.
final class BookingFixture: @unchecked Sendable {
    let harness: ServiceHarness
    let service: RunningService
    let clock: ManualClock
    let shops: ShopDirectory
    let account: RunningServer
    let client: RPCClient
    private let clientTask: Task<Void, Never>

    var booking: YediBooking.BookingService.Client { YediBooking.BookingService.Client(client) }

    static func start(
        clock: ManualClock = ManualClock(BookingFixture.seoul(2027, 3, 10, hour: 8)),
        harness: ServiceHarness? = nil,
        shops: ShopDirectory = ShopDirectory(),
        dataDirectory: String? = nil,
        logs: LogCapture? = nil,
        quotas: QuotaLimits = .defaults,
        payments: PaymentSettings = .development,
        database: DatabaseSettings = .sqlite,
        logKey: String? = nil
    ) async throws -> BookingFixture {
        let harness = try harness ?? ServiceHarness()
        let account = try await shops.start(harness)
        var configuration = try harness.configuration(
            BookingServiceDefinition.defaults, peers: ["account": account.port], dataDirectory: dataDirectory)
        if logs != nil { configuration.logLevel = .info }
        configuration.quotas = quotas
        configuration.payments = payments
        configuration.database = database
        configuration.logKeyFile = logKey
        let service = try await harness.start(
            BookingServiceDefinition.self, configuration: configuration, clock: clock, logger: logs?.logger())
        let client = try RPCClient(configuration: harness.clientConfiguration(port: try await service.port))
        return BookingFixture(
            harness: harness, service: service, clock: clock, shops: shops, account: account, client: client)
    }

    private init(
        harness: ServiceHarness, service: RunningService, clock: ManualClock, shops: ShopDirectory,
        account: RunningServer, client: RPCClient
    ) {
        self.harness = harness
        self.service = service
        self.clock = clock
        self.shops = shops
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

    /// Call options with a token for `user`, valid both on the fixture's clock (BookingService) and on the
    /// system clock (the stand-in AccountService, which verifies the token forwarded on the user's behalf).
    func caller(_ user: String, _ role: UserRole) throws -> CallOptions {
        let issued = min(clock.now, Date())
        let until = max(clock.now, Date()).addingTimeInterval(400 * 86_400)
        return ServiceHarness.bearer(
            try harness.token(
                user: user, role: role, now: issued, lifetime: .seconds(Int64(until.timeIntervalSince(issued)))))
    }

    func customer(_ id: String = "customer-1") throws -> CallOptions { try caller(id, .customer) }
    func designer(_ id: String = "designer-1") throws -> CallOptions { try caller(id, .designer) }

    /// Sets `id` up as a designer the way AccountService does when the account is created: the stand-in
    /// knows the shop's hours (for the designer's own calls), and BookingService gets `SetUpDesigner` from
    /// "account".
    func addDesigner(_ id: String, opening: Int32 = 9, closing: Int32 = 21, zone: String = "Asia/Seoul") async throws {
        shops.add(id, opening: opening, closing: closing, zone: zone)
        let (booking, client, task) = try await serviceClient("account")
        do {
            _ = try await booking.setUpDesigner(
                .init(designerID: id, openingHour: opening, closingHour: closing, timeZone: zone))
        } catch {
            client.beginGracefulShutdown()
            await task.value
            throw error
        }
        client.beginGracefulShutdown()
        await task.value
    }

    /// A client presenting service `name`'s certificate.
    func serviceClient(_ name: String) async throws -> (YediBooking.BookingService.Client, RPCClient, Task<Void, Never>)
    {
        let client = try RPCClient(
            configuration: harness.clientConfiguration(port: try await service.port, identity: name))
        let task = Task { await client.run() }
        return (YediBooking.BookingService.Client(client), client, task)
    }

    var store: SQLiteBookingStore {
        SQLiteBookingStore(
            database: service.environment.database, outbox: service.environment.outbox,
            scheduler: service.environment.scheduler)
    }

    func count(_ sql: String) async throws -> Int {
        try await service.environment.database.read { db in try Int.fetchOne(db, sql: sql) ?? 0 }
    }

    /// The instant of a local time in Seoul.
    static func seoul(_ year: Int, _ month: Int, _ day: Int, hour: Int, minute: Int = 0) -> Date {
        local("Asia/Seoul", year, month, day, hour: hour, minute: minute)
    }

    static func local(_ zone: String, _ year: Int, _ month: Int, _ day: Int, hour: Int, minute: Int = 0) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        return calendar.date(
            from: DateComponents(year: year, month: month, day: day, hour: hour, minute: minute))!
    }

    static func ms(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970 * 1_000) }

    static func date(_ year: Int32, _ month: Int32, _ day: Int32) -> YediCommon.LocalDate {
        .init(year: year, month: month, day: day)
    }
}
