import Foundation
import PostgresNIO
import PostgresTestSupport
import RPCAccess
import ServiceRuntime
import XCTest
import YediProto

@testable import AccountService

/// The inbox contract against the PostgreSQL store, on a fresh database of its own per test; then what
/// needs replicas: two pools on one database, as two processes have.
final class PostgresInboxStoreTests: XCTestCase {
    /// Every version of the service: an account's deletion reaches every store's tables.
    static let migrations = AccountServiceDefinition.postgresMigrations ?? []

    private var database: TestDatabase?
    private var accounts: PostgresAccountStore!
    private var store: PostgresNotificationStore!

    override func setUp() async throws {
        let database = try await TestDatabase(service: "account", migrations: Self.migrations)
        self.database = database
        accounts = try await PostgresAccountStoreTests.store(on: database.postgres, replica: "a")
        store = Self.store(on: database.postgres, replica: "a", kept: 3)
    }

    override func tearDown() async throws {
        try await database?.close()
        database = nil
    }

    /// A store as one replica makes it: its own job and notification ids.
    static func store(on postgres: ServicePostgres, replica: String, kept: Int) -> PostgresNotificationStore {
        let clock = ManualClock()
        return PostgresNotificationStore(
            postgres: postgres,
            notifier: PostgresNotifier(
                outbox: Outbox(ids: SequentialIDGenerator(prefix: "push-job-\(replica)-"), clock: clock),
                ids: SequentialIDGenerator(prefix: "n-\(replica)-"), clock: clock, kept: kept))
    }

    // MARK: The contract

    func testDevicesRegisterOncePerTokenAndKeepTheNewest() async throws {
        try await InboxStoreContract.devicesRegisterOncePerTokenAndKeepTheNewest(accounts, store)
    }

    func testNotifyIsAppliedOncePerDeliveryAndOnlyInTheUsersApp() async throws {
        try await InboxStoreContract.notifyIsAppliedOncePerDeliveryAndOnlyInTheUsersApp(accounts, store)
    }

    func testInboxPagesNewestFirstCountsAndMarksRead() async throws {
        // Five notifications against a quota of three kept: re-made with a larger quota.
        store = Self.store(on: try XCTUnwrap(database).postgres, replica: "a", kept: 500)
        try await InboxStoreContract.inboxPagesNewestFirstCountsAndMarksRead(accounts, store)
    }

    func testSignOutRemovesItsSessionsDevicesAndDeletionRemovesEverything() async throws {
        try await InboxStoreContract.signOutRemovesItsSessionsDevicesAndDeletionRemovesEverything(accounts, store)
    }

    func testRetentionPrunesOldNotifications() async throws {
        try await InboxStoreContract.retentionPrunesOldNotifications(accounts, store)
    }

    /// One `notify`: the inbox row and one push job per device of the user in that app, in one
    /// transaction; a transaction that fails afterwards leaves neither. The quota keeps the newest three.
    func testNotifyWritesTheInboxRowAndOnePushJobPerDeviceInOneTransaction() async throws {
        try await InboxStoreContract.addUsers(accounts)
        for token in ["phone", "tablet"] {
            _ = try await store.registerDevice(InboxStoreContract.device(token, user: "u1"), keep: 10)
        }
        _ = try await store.registerDevice(InboxStoreContract.device("other", user: "u2", family: "s-c"), keep: 10)
        _ = try await store.notify(
            userID: "u1", app: .yedi, InboxStoreContract.hello, delivery: InboxStoreContract.delivery("one"))
        let pushes = try await pushJobs()
        XCTAssertEqual(pushes.map(\.deviceToken), ["phone", "tablet"], "in registration order")
        XCTAssertEqual(pushes.first?.title, "새 댓글")
        XCTAssertEqual(pushes.first?.template, "comment")
        XCTAssertEqual(pushes.first?.values.map(\.name), ["post_id", "notification_id"])

        struct Failure: Error {}
        let notifier = store.notifier
        do {
            try await XCTUnwrap(database).postgres.write { tx in
                try await notifier.notify(userID: "u1", app: .yedi, InboxStoreContract.hello, in: tx)
                throw Failure()
            }
            XCTFail("the transaction did not fail")
        } catch is Failure {}
        let after = try await pushJobs()
        let inbox = try await store.notifications(userID: "u1", app: .yedi, after: nil, limit: 10)
        XCTAssertEqual(after.count, 2, "a rolled-back notify queued no push")
        XCTAssertEqual(inbox.count, 1, "a rolled-back notify kept no row")

        for index in 1...4 {
            _ = try await store.notify(
                userID: "u1", app: .yedi, InboxStoreContract.hello, delivery: InboxStoreContract.delivery("q\(index)"))
        }
        let kept = try await store.notifications(userID: "u1", app: .yedi, after: nil, limit: 10)
        XCTAssertEqual(kept.count, 3, "the quota notifications.kept keeps the newest")
    }

    // MARK: Two replicas on one database

    /// The contract's replica checks with two stores on two pools of one database.
    func testOneTokenRegisteredOnTwoReplicasAtOnceIsOneDevice() async throws {
        try await withSecondReplica { other in
            try await InboxStoreContract.oneTokenRegisteredOnTwoReplicasAtOnceIsOneDevice(accounts, [store!, other])
        }
    }

    func testADevicesQuotaHoldsAcrossReplicas() async throws {
        try await withSecondReplica { other in
            try await InboxStoreContract.aDevicesQuotaHoldsAcrossReplicas(accounts, [store!, other])
        }
    }

    /// And what the store protocol cannot read: one push job a delivery, in the outbox.
    func testTheSameDeliveryOnTwoReplicasAtOnceIsAppliedOnce() async throws {
        try await withSecondReplica { other in
            try await InboxStoreContract.theSameDeliveryOnTwoReplicasAtOnceIsAppliedOnce(accounts, [store!, other])
        }
        let pushes = try await pushJobs()
        XCTAssertEqual(pushes.count, 10)
    }

    func testConcurrentNotificationsOnTwoReplicasKeepTheQuotaExactly() async throws {
        try await withSecondReplica { other in
            try await InboxStoreContract.concurrentNotificationsOnTwoReplicasKeepTheQuotaExactly(
                accounts, [store!, other])
        }
    }

    /// Notifying a user whose account a replica is deleting at that moment answers an id (before the
    /// deletion, which then takes the row) or nil (after it): never a broken foreign key.
    func testNotifyingAUserBeingDeletedAnswersNilNotAnError() async throws {
        let accounts = try XCTUnwrap(accounts)
        try await withSecondReplica { other in
            for round in 0..<10 {
                let id = "gone-\(round)"
                try await accounts.createUser(
                    AccountStoreContract.user(id), designer: nil,
                    session: AccountStoreContract.session("s-\(id)", user: id))
                async let deleted = accounts.deleteAccount(userID: id, now: 5)
                async let notified = other.notify(
                    userID: id, app: .yedi, InboxStoreContract.hello, delivery: InboxStoreContract.delivery(id))
                let (wasDeleted, _) = try await (deleted, notified)
                XCTAssertTrue(wasDeleted)
            }
        }
        let left = try await count("SELECT count(*) FROM notification")
        XCTAssertEqual(left, 0, "every notification went with its user")
    }

    // MARK: Helpers

    /// Runs `body` with a second replica's store: its own pool on the same database.
    private func withSecondReplica(_ body: (PostgresNotificationStore) async throws -> Void) async throws {
        try await XCTUnwrap(database).withSecondPool { postgres in
            try await body(Self.store(on: postgres, replica: "b", kept: 3))
        }
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        try await XCTUnwrap(database).postgres.snapshot { tx in try await tx.query(query).first?.decode(Int.self) ?? -1
        }
    }

    private func pushJobs() async throws -> [YediRuntime.PushMessage] {
        try await XCTUnwrap(database).postgres.snapshot { tx in
            try await tx.query("SELECT payload FROM runtime_outbox WHERE peer = 'push' ORDER BY seq").map { row in
                try YediRuntime.PushMessage(serializedBytes: Array(try row.decode(ByteBuffer.self).readableBytesView))
            }
        }
    }
}
