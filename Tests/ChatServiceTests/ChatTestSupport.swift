import AccessTokens
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
@testable import ChatService

/// ChatService in this process (real TLS, database and access rules) with its peers: the real
/// AccountService (names, designer checks) and stand-ins for ContentService and BookingService (being
/// built in parallel) that answer from dictionaries the test fills.
final class ChatFixture: Sendable {
    let harness: ServiceHarness
    let account: RunningService
    let content: PeerServer
    let booking: PeerServer
    let peers: FakePeerData
    let clock: ManualClock
    let dataDirectory: String
    let hubCapacity: Int
    let shutdownGrace: Int
    /// `--quota` entries for ChatService (`rooms.day=5`).
    let quotas: [String]
    /// `--apps` for both services (nil: YeDi alone).
    let apps: String?
    /// ChatService's engine, and the log key file every replica shares on PostgreSQL.
    let database: DatabaseSettings
    let logKey: String?
    private let running: NIOLockedValueBox<(service: RunningService, client: RPCClient, task: Task<Void, Never>)?>
    private let accountClient: RPCClient
    private let accountTask: Task<Void, Never>

    /// - Parameters:
    ///   - inMemoryDisk: keep the chat database on tmpfs (the big stream tests: fsync costs nothing there).
    ///   - shutdownGrace: seconds the chat server's drain may take.
    ///   - database: ChatService's engine (`ChatServiceOnPostgresTests`); AccountService stays on SQLite.
    static func start(
        hubCapacity: Int = 1_024, inMemoryDisk: Bool = false, shutdownGrace: Int = 1, quotas: [String] = [],
        apps: String? = nil, database: DatabaseSettings = .sqlite
    ) async throws -> ChatFixture {
        let harness = try ServiceHarness()
        // Starts at the real time: the peer stand-ins check forwarded tokens against the system clock.
        let clock = ManualClock(Date())
        let peers = FakePeerData()
        let content = PeerServer(try await harness.startFakePeer("content", services: [peers.contentMethods()]))
        let booking = PeerServer(try await harness.startFakePeer("booking", services: [peers.bookingMethods()]))
        var accountPeers: [String: Int] = [:]
        for peer in AccountServiceDefinition.defaults.peers { accountPeers[peer] = try ServiceHarness.unusedPort() }
        let account = try await harness.start(
            TestAccountDefinition.self,
            configuration: try harness.configuration(
                AccountServiceDefinition.defaults, peers: accountPeers, configure: { $0.apps = apps }),
            clock: clock)
        let dataDirectory =
            inMemoryDisk
            ? "/dev/shm/yedi-chat-test-\(UUID().uuidString.prefix(8))"
            : harness.dataRoot.appendingPathComponent("chat").path
        let accountClient = try RPCClient(configuration: harness.clientConfiguration(port: try await account.port))
        var logKey: String?
        if case .postgres = database {
            let file = harness.dataRoot.appendingPathComponent("log.key")
            try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: file)
            logKey = file.path
        }
        let fixture = ChatFixture(
            harness: harness, account: account, content: content, booking: booking, peers: peers, clock: clock,
            dataDirectory: dataDirectory, hubCapacity: hubCapacity, shutdownGrace: shutdownGrace, quotas: quotas,
            apps: apps, database: database, logKey: logKey, accountClient: accountClient)
        try await fixture.startChat()
        return fixture
    }

    private init(
        harness: ServiceHarness, account: RunningService, content: PeerServer, booking: PeerServer,
        peers: FakePeerData, clock: ManualClock, dataDirectory: String, hubCapacity: Int, shutdownGrace: Int,
        quotas: [String], apps: String?, database: DatabaseSettings, logKey: String?, accountClient: RPCClient
    ) {
        self.apps = apps
        self.database = database
        self.logKey = logKey
        self.shutdownGrace = shutdownGrace
        self.quotas = quotas
        self.harness = harness
        self.account = account
        self.content = content
        self.booking = booking
        self.peers = peers
        self.clock = clock
        self.dataDirectory = dataDirectory
        self.hubCapacity = hubCapacity
        self.running = NIOLockedValueBox(nil)
        self.accountClient = accountClient
        self.accountTask = Task { await accountClient.run() }
    }

    /// Starts ChatService (again, on the same data after `stopChat`).
    func startChat() async throws {
        let (service, client, task) = try await startReplica(dataDirectory: dataDirectory)
        running.withLockedValue { $0 = (service, client, task) }
    }

    /// A ChatService on `dataDirectory` (another replica, on PostgreSQL), with a client of its own; the
    /// caller stops both.
    func startReplica(dataDirectory: String) async throws -> (
        service: RunningService, client: RPCClient, task: Task<Void, Never>
    ) {
        var configuration = try harness.configuration(
            ChatServiceDefinition.defaults,
            peers: ["account": try await account.port, "content": content.port, "booking": booking.port],
            dataDirectory: dataDirectory,
            configure: { [shutdownGrace, quotas, apps] in
                $0.shutdownGrace = "\(shutdownGrace)"
                $0.quotas = quotas
                $0.apps = apps
                // Named apart from the first replica (both would be `127.0.0.1:0`): replicas list their
                // streams' users under their names.
                $0.replica = "chat-" + URL(fileURLWithPath: dataDirectory).lastPathComponent
            })
        configuration.database = database
        configuration.logKeyFile = logKey
        TestChatDefinition.register(ChatEventHub(capacity: hubCapacity), for: dataDirectory)
        let service = try await harness.start(TestChatDefinition.self, configuration: configuration, clock: clock)
        let client = try RPCClient(configuration: harness.clientConfiguration(port: try await service.port))
        return (service, client, Task { await client.run() })
    }

    func stopChat() async throws {
        let current = running.withLockedValue { state in
            defer { state = nil }
            return state
        }
        guard let current else { return }
        current.client.beginGracefulShutdown()
        await current.task.value
        try await current.service.stop()
    }

    func stop() async throws {
        try await stopChat()
        accountClient.beginGracefulShutdown()
        await accountTask.value
        try await account.stop()
        await content.stop()
        await booking.stop()
        if dataDirectory.hasPrefix("/dev/shm/") { try? FileManager.default.removeItem(atPath: dataDirectory) }
    }

    var service: RunningService { running.withLockedValue { $0!.service } }
    var client: RPCClient { running.withLockedValue { $0!.client } }
    var chat: YediChat.ChatService.Client { YediChat.ChatService.Client(client) }
    var hub: ChatEventHub { TestChatDefinition.hub(for: dataDirectory)! }
    var store: SQLiteChatStore { SQLiteChatStore(database: service.environment.database) }

    /// The running service's store with its hub as the event sink: what SendMessage does after its checks,
    /// without the RPC (for tests that need many messages quickly; the stream path is the same).
    var liveStore: SQLiteChatStore {
        let hub = hub
        return SQLiteChatStore(database: service.environment.database, sink: { hub.publish($0) })
    }

    /// Another client of the chat service (its own connection), for spreading streams.
    func makeClient() async throws -> (client: RPCClient, task: Task<Void, Never>) {
        let client = try RPCClient(configuration: harness.clientConfiguration(port: try await service.port))
        return (client, Task { await client.run() })
    }

    // MARK: Users

    struct User: Sendable {
        let id: String
        let token: String
        let name: String
        var options: CallOptions { ServiceHarness.bearer(token) }
        func options(timeout: Duration) -> CallOptions { ServiceHarness.bearer(token, timeout: timeout) }
    }

    private static let counter = NIOLockedValueBox(0)

    /// A user signed up at the real AccountService, with a token for it.
    func signUp(_ role: UserRole, name: String? = nil) async throws -> User {
        let number = Self.counter.withLockedValue {
            $0 += 1
            return $0
        }
        let email = "user\(number)-\(UUID().uuidString.prefix(6))@example.com"
        let name = name ?? (role == .designer ? "디자이너\(number)" : "고객\(number)")
        var request =
            role == .designer ? SampleAccounts.designer(email, name: name) : SampleAccounts.customer(email)
        request.name = name
        let answer = try await YediAccount.AccountService.Client(accountClient).signUpCompletely(
            request, accountData: account.environment.dataDirectory, options: CallOptions(timeout: .seconds(10)))
        let id = try XCTUnwrap(answer.user?.id)
        return User(id: id, token: try harness.token(user: id, role: role, now: clock.now), name: name)
    }

    /// Opens the room of `customer` and `designer`.
    func open(_ customer: User, _ designer: User, post: String = "") async throws -> YediChat.OpenRoomResponse {
        try await chat.openRoom(.init(designerID: designer.id, postID: post), options: customer.options)
    }

    /// The id of the room `open` returns.
    func openRoomID(_ customer: User, _ designer: User) async throws -> String {
        let answer = try await open(customer, designer)
        guard let id = answer.room?.id, !id.isEmpty else { throw RPCError(code: .internalError, message: "no room") }
        return id
    }

    @discardableResult
    func send(_ user: User, _ room: String, _ text: String, clientID: String = "") async throws -> YediChat.ChatMessage
    {
        try await chat.sendMessage(
            .init(roomID: room, body: .text(.init(text: text)), clientMessageID: clientID), options: user.options)
    }

    /// Calls as another service (its certificate), e.g. "account" for PurgeUser.
    func asService<T: Sendable>(_ name: String, _ body: (YediChat.ChatService.Client) async throws -> T) async throws
        -> T
    {
        try await withRPCClient(
            configuration: harness.clientConfiguration(port: try await service.port, identity: name)
        ) { client in try await body(YediChat.ChatService.Client(client)) }
    }
}

/// A fake peer's server, kept by the (Sendable) fixture.
struct PeerServer: Sendable {
    let server: RPCServer
    let task: Task<Void, any Error>
    let port: Int

    init(_ running: RunningServer) {
        server = running.server
        task = running.task
        port = running.port
    }

    func stop() async {
        server.beginGracefulShutdown()
        _ = await task.result
    }
}

/// What the ContentService and BookingService stand-ins answer.
final class FakePeerData: Sendable {
    private struct State {
        var images: [String: YediContent.OwnedImageRef] = [:]
        var posts: [String: YediContent.PostPreview] = [:]
        var reservations: [String: YediBooking.Reservation] = [:]
        var down = false
    }

    private let state = NIOLockedValueBox(State())

    func addImage(_ id: String, owner: String) {
        state.withLockedValue {
            $0.images[id] = .init(
                image: .init(id: id, url: "https://img.yedi.example/\(id)", width: 640, height: 480), ownerID: owner)
        }
    }

    /// ContentService signs the image's URL anew (a later expiry).
    func resign(_ id: String, url: String) {
        state.withLockedValue { $0.images[id]?.image?.url = url }
    }

    func addPost(_ id: String, designer: String, title: String) {
        state.withLockedValue {
            $0.posts[id] = .init(
                postID: id, designerID: designer, title: title,
                firstPhoto: .init(id: "photo-\(id)", url: "https://img.yedi.example/photo-\(id)", width: 1080))
        }
    }

    func addReservation(_ id: String, customer: String, designer: String, startAt: Int64) {
        state.withLockedValue {
            $0.reservations[id] = .init(
                id: id, customerID: customer, designerID: designer, startAtMs: startAt, status: .confirmed)
        }
    }

    /// While true, both stand-ins answer UNAVAILABLE.
    func setDown(_ down: Bool) { state.withLockedValue { $0.down = down } }

    func contentMethods() -> RPCMethodSet {
        RPCMethodSet(YediContent.ContentService.descriptor) { router in
            router.register(YediContent.ContentService.Method.getImageRefs) { request, context in
                try self.check(context)
                return self.state.withLockedValue { state in
                    .init(images: request.imageIDs.compactMap { state.images[$0] })
                }
            }
            router.register(YediContent.ContentService.Method.getPostPreviews) { request, context in
                try self.check(context)
                return self.state.withLockedValue { state in
                    .init(previews: request.postIDs.compactMap { state.posts[$0] })
                }
            }
        }
    }

    func bookingMethods() -> RPCMethodSet {
        RPCMethodSet(YediBooking.BookingService.descriptor) { router in
            router.register(YediBooking.BookingService.Method.getReservation) { request, context in
                try self.check(context)
                guard let found = self.state.withLockedValue({ $0.reservations[request.reservationID] }) else {
                    throw RPCError(code: .notFound, message: "no such reservation")
                }
                return found
            }
        }
    }

    /// Only ChatService may ask (as the real access rules say), and only while up.
    private func check(_ context: ServerContext) throws {
        guard context.caller == .service(name: "chat") else {
            throw RPCError(code: .permissionDenied, message: "only chat, got \(context.caller)")
        }
        if state.withLockedValue({ $0.down }) { throw RPCError(code: .unavailable, message: "down for the test") }
    }
}

/// ChatService with a hub the test can look into (its buffer size chosen by the test).
enum TestChatDefinition: ServiceDefinition {
    static let defaults = ChatServiceDefinition.defaults
    static let summary = ChatServiceDefinition.summary
    private static let hubs = NIOLockedValueBox<[String: ChatEventHub]>([:])

    static func register(_ hub: ChatEventHub, for dataDirectory: String) {
        hubs.withLockedValue { $0[dataDirectory] = hub }
    }

    static func hub(for dataDirectory: String) -> ChatEventHub? { hubs.withLockedValue { $0[dataDirectory] } }

    static func migrate(_ migrator: inout DatabaseMigrator) {
        ChatServiceDefinition.migrate(&migrator)
    }

    static let postgresMigrations = ChatServiceDefinition.postgresMigrations

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        let hub = hub(for: env.configuration.dataDirectory) ?? ChatEventHub()
        return [ChatServiceDefinition.handlers(env, hub: hub)]
    }
}

/// AccountService with a cheap password hash, as in AccountServiceTests, hosting every service the
/// process hosts (SLP's matching answers chat's GetMatch).
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

/// Sign-up requests that pass AccountService's rules.
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
                description: "펌 전문", skills: ["펌"], rank: .principal,
                shop: .init(
                    name: "살롱", phone: "02-555-1234", address: .init(city: "서울", district: "강남구", detail: "3층"),
                    latitude: 37.5, longitude: 127.03)))
    }
}

/// A user's stream, collected by a task: events in arrival order, and how it ended.
final class StreamCollector: Sendable {
    private struct State {
        var events: [YediChat.StreamEvent] = []
        var caughtUp = false
        var end: RPCError?
        var ended = false
    }

    private let state = NIOLockedValueBox(State())

    var events: [YediChat.StreamEvent] { state.withLockedValue { $0.events } }
    /// Events other than CaughtUp.
    var realEvents: [YediChat.StreamEvent] {
        events.filter { if case .caughtUp? = $0.event { return false } else { return true } }
    }
    var caughtUp: Bool { state.withLockedValue { $0.caughtUp } }
    var ended: Bool { state.withLockedValue { $0.ended } }
    var end: RPCError? { state.withLockedValue { $0.end } }
    var lastPosition: Int64 { realEvents.last?.position ?? 0 }

    /// Reads `user`'s stream from `after` until `stopAfter` real events arrived (then cancels), or the
    /// stream ends.
    func run(
        _ chat: YediChat.ChatService.Client, user: ChatFixture.User, after: Int64 = 0, stopAfter: Int = .max
    ) async {
        do {
            try await chat.subscribe(.init(afterPosition: after), options: user.options(timeout: .seconds(300))) {
                stream in
                var count = 0
                for try await event in stream {
                    let isCaughtUp: Bool
                    if case .caughtUp? = event.event { isCaughtUp = true } else { isCaughtUp = false }
                    state.withLockedValue {
                        $0.events.append(event)
                        if isCaughtUp { $0.caughtUp = true }
                    }
                    if !isCaughtUp { count += 1 }
                    if count >= stopAfter { break }
                }
            }
        } catch {
            state.withLockedValue { $0.end = error as? RPCError ?? RPCError(code: .unknown, message: "\(error)") }
        }
        state.withLockedValue { $0.ended = true }
    }
}

/// What one recipient's stream must show: per room, the created event, then the message seqs 1, 2, 3… in
/// order (the fan-out tests, on one process and across replicas).
struct ExpectedStream {
    var rooms: Set<String> = []
    var messages: [String: Int] = [:]
    var total: Int { rooms.count + messages.values.reduce(0, +) }

    /// Checks one subscriber's events: positions strictly increasing, only its rooms, each room's created
    /// event first, then seqs 1, 2, 3… with nothing missing or repeated.
    func verify(
        _ events: [YediChat.StreamEvent], user: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        let positions = events.map(\.position)
        XCTAssertEqual(positions, positions.sorted(), "positions out of order for \(user)", file: file, line: line)
        XCTAssertEqual(Set(positions).count, positions.count, "a duplicate for \(user)", file: file, line: line)
        var created: Set<String> = []
        var nextSeq: [String: Int64] = [:]
        for event in events {
            switch event.event {
            case .roomCreated(let room)?:
                let id = room.room?.id ?? ""
                XCTAssertTrue(rooms.contains(id), "a foreign room for \(user)", file: file, line: line)
                XCTAssertTrue(created.insert(id).inserted, file: file, line: line)
            case .messageAdded(let added)?:
                let message = added.message ?? .init()
                XCTAssertTrue(created.contains(message.roomID), "a message before its room", file: file, line: line)
                XCTAssertEqual(
                    message.seq, nextSeq[message.roomID, default: 1], "gap or reorder", file: file, line: line)
                nextSeq[message.roomID] = message.seq + 1
            default:
                XCTFail("unexpected event \(event)", file: file, line: line)
            }
        }
        XCTAssertEqual(created, rooms, file: file, line: line)
        for room in rooms {
            XCTAssertEqual(
                Int(nextSeq[room, default: 1] - 1), messages[room, default: 0], "messages of \(room)",
                file: file, line: line)
        }
    }
}

/// The fan-out scenario both engines run (`ChatStreamTests`, `ChatServiceOnPostgresTests`): 100 customers
/// and 100 designers, 100 rooms (customers 0–49 two each, 50–99 none: they must see nothing), every user
/// subscribed; then 100 messages per room, both members sending, each subscriber checked for exactly its
/// rooms' events in order.
struct FanOutScenario {
    typealias Room = (id: String, customer: ChatFixture.User, designer: ChatFixture.User)
    let rooms: [Room]
    let users: [ChatFixture.User]
    let expected: [String: ExpectedStream]
    let collectors: [StreamCollector]
    let readers: [Task<Void, Never>]

    /// Signs the users up, opens the rooms through `fixture`, and subscribes every user through `clients`
    /// in turn; answers once every stream has caught up.
    static func start(_ fixture: ChatFixture, subscribingThrough clients: [RPCClient]) async throws -> FanOutScenario {
        var customers: [ChatFixture.User] = []
        var designers: [ChatFixture.User] = []
        for _ in 0..<100 {
            customers.append(try await fixture.signUp(.customer))
            designers.append(try await fixture.signUp(.designer))
        }
        var rooms: [Room] = []
        var expected: [String: ExpectedStream] = [:]
        for index in 0..<100 {
            let (customer, designer) = (customers[index % 50], designers[index])
            let id = try await fixture.openRoomID(customer, designer)
            rooms.append((id, customer, designer))
            for user in [customer, designer] {
                expected[user.id, default: .init()].rooms.insert(id)
                expected[user.id, default: .init()].messages[id] = 100
            }
        }
        let users = customers + designers
        let collectors = users.map { _ in StreamCollector() }
        var readers: [Task<Void, Never>] = []
        for (index, user) in users.enumerated() {
            let chat = YediChat.ChatService.Client(clients[index % clients.count])
            let total = expected[user.id]?.total ?? 0
            let collector = collectors[index]
            readers.append(Task { await collector.run(chat, user: user, stopAfter: total == 0 ? .max : total) })
        }
        let scenario = FanOutScenario(
            rooms: rooms, users: users, expected: expected, collectors: collectors, readers: readers)
        let allCaughtUp = try await eventually(timeout: 60) { collectors.allSatisfy(\.caughtUp) }
        XCTAssertTrue(allCaughtUp, "not every stream caught up")
        return scenario
    }

    /// 10,000 messages, 20 rooms at a time: every tenth through SendMessage on `fixture`, the others by
    /// `append` (a store's `appendMessage`: what SendMessage does after its checks, without the RPC, so a
    /// debug build spends its time on the streams under test).
    func send(_ fixture: ChatFixture, append: @escaping @Sendable (MessageDraft) async throws -> Void) async throws {
        let rooms = rooms
        try await withThrowingTaskGroup(of: Void.self) { group in
            for start in stride(from: 0, to: 100, by: 5) {
                group.addTask {
                    for index in 0..<100 {
                        for room in rooms[start..<start + 5] {
                            let sender = index % 3 == 0 ? room.designer : room.customer
                            let text = "\(room.id) #\(index)"
                            if index % 10 == 0 {
                                try await fixture.send(sender, room.id, text)
                            } else {
                                try await append(
                                    MessageDraft(
                                        id: UUID().uuidString, roomID: room.id, senderID: sender.id,
                                        sentAtMilliseconds: fixture.clock.nowMilliseconds, clientMessageID: nil,
                                        body: .text(text)))
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Waits up to `timeout` seconds for every subscriber's events, checks each, and stops the streams.
    func verifyAll(timeout: TimeInterval, file: StaticString = #filePath, line: UInt = #line) async throws {
        let (users, collectors, expected) = (users, collectors, expected)
        let done = try await eventually(timeout: timeout) {
            zip(users, collectors).allSatisfy { user, collector in
                collector.realEvents.count >= (expected[user.id]?.total ?? 0)
            }
        }
        XCTAssertTrue(done, "not every subscriber got its events", file: file, line: line)
        for (user, collector) in zip(users, collectors) {
            (expected[user.id] ?? .init()).verify(collector.realEvents, user: user.id, file: file, line: line)
        }
        for reader in readers { reader.cancel() }
        for reader in readers { await reader.value }
    }
}
