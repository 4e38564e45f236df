import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

/// `UserDirectory`: hits do not ask AccountService, misses are batched, a change or a revocation makes
/// the next read ask again, and an AccountService that does not answer leaves names out.
final class UserDirectoryTests: XCTestCase {
    private let logger = Logger(label: "test.user-directory")

    func testUserDirectoryAnswersAHitWithoutAskingAccountService() async {
        let account = FakeAccount()
        account.add("u1", name: "김민지")
        account.add("d1", name: "박지호", role: .designer)
        let directory = UserDirectory(capacity: 10, clock: ManualClock(), lookup: account.lookup)

        let first = await directory.users(["u1", "d1", "nobody"], logger: logger)
        XCTAssertEqual(first.mapValues(\.name), ["u1": "김민지", "d1": "박지호"])
        XCTAssertEqual(first["d1"]?.role, .designer)
        let second = await directory.users(["d1", "u1", "nobody", "u1"], logger: logger)
        XCTAssertEqual(second, first)
        XCTAssertEqual(account.calls, [["d1", "nobody", "u1"]], "one lookup; the unknown id is cached too")
    }

    func testUserDirectoryBatchesMissesAtAHundredIdsACall() async {
        let account = FakeAccount()
        let ids = (0..<250).map { String(format: "u%03d", $0) }
        for id in ids { account.add(id, name: "이름 \(id)") }
        let directory = UserDirectory(capacity: 1_000, clock: ManualClock(), lookup: account.lookup)
        _ = await directory.users(Array(ids.prefix(10)), logger: logger)

        let all = await directory.users(ids, logger: logger)
        XCTAssertEqual(all.count, 250)
        XCTAssertEqual(account.calls.map(\.count), [10, 100, 100, 40], "only the 240 missing ids, 100 a call")
        XCTAssertEqual(Set(account.calls.dropFirst().flatMap { $0 }), Set(ids.dropFirst(10)))
    }

    func testUserDirectoryEntriesCountForTheirLifetime() async {
        let account = FakeAccount()
        account.add("u1", name: "김민지")
        let clock = ManualClock()
        let directory = UserDirectory(capacity: 10, clock: clock, lookup: account.lookup)
        _ = await directory.users(["u1"], logger: logger)
        account.add("u1", name: "김민지2")
        clock.advance(by: 59)
        let cached = await directory.users(["u1"], logger: logger)
        XCTAssertEqual(cached["u1"]?.name, "김민지", "within its 60 s")
        clock.advance(by: 1)
        let fresh = await directory.users(["u1"], logger: logger)
        XCTAssertEqual(fresh["u1"]?.name, "김민지2", "the safety net: asked again once expired")
        XCTAssertEqual(account.calls.count, 2)
    }

    func testUserDirectoryForgetsAUserAndCachesNoAnswerFetchedBeforeTheChange() async {
        let account = FakeAccount()
        account.add("u1", name: "김민지")
        let directory = UserDirectory(capacity: 10, clock: ManualClock(), lookup: account.lookup)
        _ = await directory.users(["u1"], logger: logger)
        account.add("u1", name: "김민지2")
        directory.forget("u1")
        let renamed = await directory.users(["u1"], logger: logger)
        XCTAssertEqual(renamed["u1"]?.name, "김민지2")

        // A change (and its UserChanged) lands while a lookup is out: that lookup's answer may be the old
        // one, so it is not kept.
        directory.forget("u1")
        account.duringLookup.withLockedValue {
            $0 = {
                account.add("u1", name: "김민지3")
                directory.forget("u1")
            }
        }
        _ = await directory.users(["u1"], logger: logger)
        account.duringLookup.withLockedValue { $0 = nil }
        let after = await directory.users(["u1"], logger: logger)
        XCTAssertEqual(after["u1"]?.name, "김민지3")
        XCTAssertEqual(account.calls.count, 4, "the answer fetched across the change was not cached")
    }

    func testUserDirectoryAnswersWithoutNamesWhileAccountServiceIsDown() async {
        let account = FakeAccount()
        account.add("u1", name: "김민지")
        account.add("u2", name: "이소라")
        let clock = ManualClock()
        let directory = UserDirectory(capacity: 10, clock: clock, lookup: account.lookup)
        _ = await directory.users(["u1"], logger: logger)
        account.down.withLockedValue { $0 = true }

        let fresh = await directory.users(["u1", "u2"], logger: logger)
        XCTAssertEqual(fresh.mapValues(\.name), ["u1": "김민지"], "cached names still show; the others are left out")
        clock.advance(by: 60)
        let expired = await directory.users(["u1", "u2"], logger: logger)
        XCTAssertEqual(expired, [:], "an expired name is not served: it may have changed")

        account.down.withLockedValue { $0 = false }
        let back = await directory.users(["u1", "u2"], logger: logger)
        XCTAssertEqual(back.mapValues(\.name), ["u1": "김민지", "u2": "이소라"], "failures were not cached")
    }

    /// In a running process: AccountService's `Users/UserChanged` and `Revocations/RevokeUser` make the
    /// process's directory forget the user; nobody else may send `UserChanged`.
    func testUserDirectoryOfAProcessForgetsUsersAccountServiceSaysChangedOrRevoked() async throws {
        let harness = try ServiceHarness()
        let account = FakeAccount()
        account.add("u1", name: "김민지")
        let configuration = try harness.configuration(DirectoryTestbed.defaults)
        DirectoryTestbed.accounts.withLockedValue { $0[configuration.dataDirectory] = account }
        let service = try await harness.start(DirectoryTestbed.self, configuration: configuration)
        let directory = try XCTUnwrap(DirectoryTestbed.directories.withLockedValue { $0[configuration.dataDirectory] })
        let port = try await service.port
        func read() async -> String? { await directory.users(["u1"], logger: logger)["u1"]?.name }

        _ = await read()
        account.add("u1", name: "김민지2")
        for identity in ["chat", "operator"] {
            let refused = await statusCode {
                try await withRPCClient(configuration: harness.clientConfiguration(port: port, identity: identity)) {
                    _ = try await YediRuntime.Users.Client($0).userChanged(.init(userID: "u1"))
                }
            }
            XCTAssertEqual(refused, .permissionDenied, identity)
        }
        let stillCached = await read()
        XCTAssertEqual(stillCached, "김민지")

        try await withRPCClient(configuration: harness.clientConfiguration(port: port, identity: "account")) {
            client in
            _ = try await YediRuntime.Users.Client(client).userChanged(.init(userID: "u1"))
            let renamed = await read()
            XCTAssertEqual(renamed, "김민지2")

            account.remove("u1")
            let now = Int64(Date().timeIntervalSince1970 * 1_000)
            _ = try await YediRuntime.Revocations.Client(client).revokeUser(
                .init(userID: "u1", revokedAtMs: now, keepUntilMs: now + 60_000))
            let revoked = await read()
            XCTAssertNil(revoked, "a deleted user's name goes with the revocation")

            let empty = await statusCode {
                _ = try await YediRuntime.Users.Client(client).userChanged(.init(userID: ""))
            }
            XCTAssertEqual(empty, .invalidArgument)
        }
        XCTAssertEqual(account.calls.count, 3)
        try await service.stop()
    }
}

/// AccountService's `BatchGetUsers` as a dictionary: records each call's ids, fails while `down`.
private final class FakeAccount: Sendable {
    private let users = NIOLockedValueBox<[String: YediAccount.PublicUser]>([:])
    private let recorded = NIOLockedValueBox<[[String]]>([])
    let down = NIOLockedValueBox(false)
    /// Runs inside the next lookups, after the answer is read (a change landing while one is out).
    let duringLookup = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)

    var calls: [[String]] { recorded.withLockedValue { $0 } }

    func add(_ id: String, name: String, role: YediAccount.Role = .customer) {
        users.withLockedValue { $0[id] = .init(id: id, role: role, name: name) }
    }

    func remove(_ id: String) {
        users.withLockedValue { $0[id] = nil }
    }

    var lookup: UserDirectory.Lookup {
        { ids in
            self.recorded.withLockedValue { $0.append(ids) }
            if self.down.withLockedValue({ $0 }) { throw RPCError(code: .unavailable, message: "down for the test") }
            let answer = self.users.withLockedValue { users in ids.compactMap { users[$0] } }
            self.duringLookup.withLockedValue { $0 }?()
            return answer
        }
    }
}

/// A process with a `UserDirectory` over the test's `FakeAccount` (found by its data folder) and no
/// service of its own: what the runtime hosts is under test.
private enum DirectoryTestbed: ServiceDefinition {
    static let defaults = ServiceDefaults(name: "content", port: 7002, metricsPort: 9102)
    static let summary = "A process with a user directory, for tests."
    static let accounts = NIOLockedValueBox<[String: FakeAccount]>([:])
    static let directories = NIOLockedValueBox<[String: UserDirectory]>([:])

    static func migrate(_ migrator: inout DatabaseMigrator) {}

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        let account = accounts.withLockedValue { $0[env.configuration.dataDirectory] } ?? FakeAccount()
        let directory = UserDirectory(env, lookup: account.lookup)
        directories.withLockedValue { $0[env.configuration.dataDirectory] = directory }
        return []
    }
}
