import Foundation
import GRDB
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediCrypto
import YediProto

@testable import AccountService

/// An AccountService running in this process (real TLS, real database, the runner's access rules), with
/// a fixed clock and a cheap password hasher, and a client for it.
final class AccountFixture: Sendable {
    let harness: ServiceHarness
    let service: RunningService
    let clock: ManualClock
    let client: RPCClient
    private let clientTask: Task<Void, Never>

    var account: YediAccount.AccountService.Client { YediAccount.AccountService.Client(client) }

    /// - Parameters:
    ///   - peers: peer ports; peers not named get a port nothing listens on.
    ///   - harness: reuse one (and `dataDirectory`) to restart a service on the same data.
    static func start(
        peers: [String: Int] = [:],
        clock: ManualClock = ManualClock(),
        harness: ServiceHarness? = nil,
        dataDirectory: String? = nil,
        database: DatabaseSettings = .sqlite,
        logKey: String? = nil,
        configure: (inout ServiceOptions) -> Void = { _ in }
    ) async throws -> AccountFixture {
        let harness = try harness ?? ServiceHarness()
        var allPeers = peers
        for peer in AccountServiceDefinition.defaults.peers where allPeers[peer] == nil {
            allPeers[peer] = try ServiceHarness.unusedPort()
        }
        var configuration = try harness.configuration(
            AccountServiceDefinition.defaults, peers: allPeers, dataDirectory: dataDirectory, configure: configure)
        configuration.database = database
        configuration.logKeyFile = logKey
        let service = try await harness.start(TestAccountDefinition.self, configuration: configuration, clock: clock)
        let client = try RPCClient(configuration: harness.clientConfiguration(port: try await service.port))
        return AccountFixture(harness: harness, service: service, clock: clock, client: client)
    }

    private init(harness: ServiceHarness, service: RunningService, clock: ManualClock, client: RPCClient) {
        self.harness = harness
        self.service = service
        self.clock = clock
        self.client = client
        self.clientTask = Task { await client.run() }
    }

    func stop() async throws {
        client.beginGracefulShutdown()
        await clientTask.value
        try await service.stop()
    }

    /// Signs up the whole way: `SignUp`, the code from the service's development mailbox, `CompleteSignUp`.
    func signUp(_ request: YediAccount.SignUpRequest) async throws -> YediAccount.CompleteSignUpResponse {
        try await account.signUpCompletely(request, accountData: service.environment.dataDirectory)
    }

    /// The mail the service has sent so far, oldest first.
    func sentMail() throws -> [SentMessage] {
        try DevelopmentFileSender.messages(
            in: service.environment.dataDirectory.appendingPathComponent("sent-mail"))
    }

    /// `authorization: Bearer <token>`
    func options(_ token: String) -> CallOptions { ServiceHarness.bearer(token) }

    /// The SQLite store under the running service, for checks behind the RPCs.
    var store: SQLiteAccountStore {
        SQLiteAccountStore(
            database: service.environment.database, events: AccountEvents(outbox: service.environment.outbox),
            revokedUsers: service.environment.revokedUsers)
    }
}

/// AccountService with a cheap password hash (N = 2^10): the production cost is for the bench, not tests.
enum TestAccountDefinition: ServiceDefinition {
    static let defaults = AccountServiceDefinition.defaults
    static let summary = AccountServiceDefinition.summary
    static let issuesTokens = true

    static func migrate(_ migrator: inout DatabaseMigrator) {
        AccountServiceDefinition.migrate(&migrator)
    }

    static let postgresMigrations = AccountServiceDefinition.postgresMigrations

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        let account = try await AccountServiceDefinition.handlers(
            env, passwords: PasswordHasher(parameters: .fastForTests), providers: TestIdentityProviders.verifiers)
        return AccountServiceDefinition.services(env, account: account)
    }
}

/// Sign-up requests that pass every rule; tests change one field at a time.
enum SampleAccounts {
    static func customer(_ email: String = "minji@example.com", password: String = "hair2024!")
        -> YediAccount.SignUpRequest
    {
        YediAccount.SignUpRequest(
            email: email, password: password, name: "김민지", phone: "010-1234-5678", gender: .female,
            birthDate: .init(year: 1995, month: 4, day: 12), role: .customer)
    }

    static func designer(
        _ email: String = "jiho@example.com", name: String = "박지호", shopName: String = "살롱 드 서울",
        district: String = "강남구 테헤란로"
    ) -> YediAccount.SignUpRequest {
        YediAccount.SignUpRequest(
            email: email, password: "scissors99", name: name, phone: "01098765432", gender: .male,
            birthDate: .init(year: 1988, month: 11, day: 3), role: .designer,
            designer: .init(
                description: "펌 전문", skills: ["펌", "염색"], rank: .principal,
                shop: .init(
                    name: shopName, phone: "02-555-1234",
                    address: .init(city: "서울", district: district, detail: "3층"),
                    latitude: 37.5, longitude: 127.03,
                    messengerLinks: [.init(kind: "kakaotalk", url: "https://open.kakao.com/o/abc")])))
    }
}
