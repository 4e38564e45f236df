import Foundation
import PostgresNIO
import PostgresTestSupport
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// AccountService started by the runner on PostgreSQL (`--database postgresql://…`, docs/postgres.md):
/// it migrates an empty database itself with every store's versions, keeps nothing in its data folder
/// that must survive, and replicas on one database serve one another's accounts and each app's rows.
final class AccountServiceOnPostgresTests: XCTestCase {
    private var database: TestDatabase!
    private var harness: ServiceHarness!
    private var replicas: [AccountFixture] = []
    private let clock = ManualClock()

    override func setUp() async throws {
        database = try await TestDatabase()
        harness = try ServiceHarness()
    }

    override func tearDown() async throws {
        for replica in replicas { try? await replica.stop() }
        replicas = []
        try await database?.close()
    }

    /// A replica on its own new data folder, with the deployment's log key that every replica shares.
    private func replica() async throws -> AccountFixture {
        let folder = harness.dataRoot.appendingPathComponent("replica-\(UUID().uuidString.prefix(8))").path
        let logKey = harness.dataRoot.appendingPathComponent("log.key")
        if !FileManager.default.fileExists(atPath: logKey.path) {
            try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: logKey)
        }
        let fixture = try await AccountFixture.start(
            clock: clock, harness: harness, dataDirectory: folder, database: .postgres(database.settings),
            logKey: logKey.path
        ) { $0.apps = AccountFixture.repositoryApps }
        replicas.append(fixture)
        return fixture
    }

    /// Signs up through `replica` the whole way. The replicas share one outbox, so the code's mail leaves
    /// from whichever replica claims it first (under load, not always the one signed up through).
    private func signUp(_ request: YediAccount.SignUpRequest, through replica: AccountFixture) async throws
        -> YediAccount.CompleteSignUpResponse
    {
        let started = try await replica.account.signUp(request)
        let code = try await DevelopmentFileSender.code(
            forSignUp: started.verificationID,
            inAnyOf: replicas.map { $0.service.environment.dataDirectory.appendingPathComponent("sent-mail") },
            timeout: .seconds(20))
        return try await replica.account.completeSignUp(.init(verificationID: started.verificationID, code: code))
    }

    func testTheRunnerMigratesAnEmptyDatabaseAndAnotherReplicaServesWhatOneStored() async throws {
        let first = try await replica()
        let signedUp = try await first.signUp(SampleAccounts.customer())
        XCTAssertFalse(
            FileManager.default.fileExists(
                atPath: first.service.environment.dataDirectory.appendingPathComponent("account.sqlite").path),
            "on PostgreSQL the data folder holds no database")
        let versions = try await database.postgres.read { connection in
            try await connection.query(
                "SELECT name FROM runtime_schema_migrations ORDER BY position", logger: TestPostgres.logger
            )
            .collect().map { try $0.decode(String.self) }
        }
        XCTAssertEqual(versions, AccountServiceDefinition.postgresMigrations?.map(\.name))

        let second = try await replica()
        let signedIn = try await second.account.signIn(.init(email: "minji@example.com", password: "hair2024!"))
        XCTAssertEqual(signedIn.user?.id, signedUp.user?.id)
        let me = try await second.account.getMe(
            .init(), options: second.options(try XCTUnwrap(signedUp.session).accessToken))
        XCTAssertEqual(me.name, "김민지")

        // Deleted through the second replica: the first no longer signs the user in.
        let token = try XCTUnwrap(signedIn.session).accessToken
        _ = try await second.account.deleteAccount(.init(password: "hair2024!"), options: second.options(token))
        let afterDeletion = await statusCode {
            _ = try await first.account.signIn(.init(email: "minji@example.com", password: "hair2024!"))
        }
        XCTAssertEqual(afterDeletion, .unauthenticated)
        // The first replica wrote nothing of it, yet refuses the user's tokens within about a second.
        let issuedAt = clock.now.addingTimeInterval(-1)
        let revokedOnFirst = try await eventually(timeout: 5) {
            first.service.environment.revokedUsers.isRevoked(userID: signedUp.user?.id ?? "", issuedAt: issuedAt)
        }
        XCTAssertTrue(revokedOnFirst, "a revocation written through another replica reaches this one's memory")
    }

    /// The same refresh token presented to two replicas at once: one new session and one refusal, as two
    /// calls one after the other give (the claim is one conditional UPDATE).
    func testARefreshTokenRotatesOnceAcrossReplicas() async throws {
        let pair = [try await replica(), try await replica()]
        for round in 0..<5 {
            let signedUp = try await signUp(SampleAccounts.customer("user\(round)@example.com"), through: pair[0])
            let session = try XCTUnwrap(signedUp.session)
            let codes = await withTaskGroup(of: StatusCode.self) { group in
                for replica in pair {
                    group.addTask {
                        await statusCode {
                            _ = try await replica.account.refreshSession(.init(refreshToken: session.refreshToken))
                        }
                    }
                }
                return await group.reduce(into: [StatusCode]()) { $0.append($1) }
            }
            XCTAssertEqual(codes.filter { $0 == .ok }.count, 1, "round \(round): \(codes)")
            XCTAssertEqual(codes.filter { $0 == .unauthenticated }.count, 1, "round \(round): \(codes)")
        }
    }

    /// Each app's store through the RPCs, one replica writing and the other reading or answering: SLP's
    /// match, the inbox row its request left, a moderation report, and Zipadoo's friends.
    func testEachAppsStoreServesAcrossReplicas() async throws {
        let (first, second) = (try await replica(), try await replica())
        let matching = (YediSlp.Matching.Client(first.client), YediSlp.Matching.Client(second.client))
        let ana = try await first.member("slp-ana", app: "slp", nickname: "아나")
        let bo = try await first.member("slp-bo", app: "slp", nickname: "보")
        for (client, options) in [(matching.0, ana), (matching.1, bo)] {
            let created = try await client.createProfile(
                .init(birthDate: .init(year: 1998, month: 3, day: 4), gender: .female, email: "x@example.com"),
                options: options)
            XCTAssertEqual(created.outcome, .created)
            let cityHall = SlpStoreContract.cityHall
            _ = try await client.enterQueue(
                .init(latitude: cityHall.latitude, longitude: cityHall.longitude, studies: []), options: options)
        }
        let requested = try await matching.0.request(.init(otherID: "slp-bo"), options: ana)
        XCTAssertEqual(requested.outcome, .sent)
        let accepted = try await matching.1.accept(.init(otherID: "slp-ana"), options: bo)
        XCTAssertEqual(accepted.outcome, .matched)
        let state = try await matching.0.getState(.init(), options: ana)
        XCTAssertEqual(state.state, .matched)
        XCTAssertEqual(state.partnerID, "slp-bo")
        let inbox = try await YediAccount.Notifications.Client(second.client).listNotifications(
            .init(page: .init(limit: 10)), options: bo)
        XCTAssertEqual(inbox.notifications.count, 1, "the request's notification, written through the first")

        let report = try await YediModeration.Moderation.Client(second.client).reportMember(
            .init(reporteeID: "slp-bo", reasons: ["1"]), options: ana)
        let mine = try await YediModeration.Moderation.Client(first.client).listMyCases(
            .init(page: .init(limit: 10)), options: ana)
        XCTAssertEqual(mine.cases.map(\.id), [report.reportID])

        let friends = (YediZipadoo.Friends.Client(first.client), YediZipadoo.Friends.Client(second.client))
        let joined = try await friends.0.signUp(
            ZipadooFriendsTests.signUpRequest("potato"), options: ZipadooFriendsTests.anonymous)
        let other = try await friends.1.signUp(
            ZipadooFriendsTests.signUpRequest("tomato"), options: ZipadooFriendsTests.anonymous)
        let potato = first.options(try XCTUnwrap(joined.session).accessToken)
        let tomato = second.options(try XCTUnwrap(other.session).accessToken)
        _ = try await friends.0.requestFriend(.init(nickname: "tomato"), options: potato)
        _ = try await friends.1.acceptFriend(.init(userID: joined.profile?.member?.userID ?? ""), options: tomato)
        let list = try await friends.0.listFriends(.init(), options: potato)
        XCTAssertEqual(list.friends.map(\.nickname), ["tomato"])
    }
}
