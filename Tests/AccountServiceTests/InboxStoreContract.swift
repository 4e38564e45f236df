import Foundation
import GRDB
import Logging
import RPCAccess
import ServiceRuntime
import XCTest
import YediProto

@testable import AccountService

/// What every `NotificationStore` must do (devices and the inbox), written against the protocols only;
/// the account store is the one the rows belong to (sign-out and deletion remove them).
enum InboxStoreContract {
    typealias User = AccountStoreContract

    static func device(_ token: String, user: String, family: String = "s-a", app: AppID = .yedi, at: Int64 = 1)
        -> DeviceRecord
    {
        DeviceRecord(
            id: "d-\(token)", userID: user, app: app, platform: .fcm, token: token, sessionFamilyID: family,
            registeredAtMilliseconds: at)
    }

    static let hello = NotificationContent(
        kind: "comment", title: "새 댓글", body: "안녕하세요", data: [(key: "post_id", value: "p1")])

    static func delivery(_ key: String) -> Delivery { Delivery(key: "content/\(key)", method: "test/Notify") }

    static func addUsers(_ accounts: any AccountStore) async throws {
        try await accounts.createUser(User.user("u1"), designer: nil, session: User.session("s-a", user: "u1"))
        try await accounts.createSession(User.session("s-b", user: "u1"))
        try await accounts.createUser(User.user("u2"), designer: nil, session: User.session("s-c", user: "u2"))
        var member = User.user("m1", role: "member")
        member.app = "slp"
        try await accounts.createUser(member, designer: nil, session: User.session("s-m", user: "m1"))
    }

    static func devicesRegisterOncePerTokenAndKeepTheNewest(
        _ accounts: any AccountStore, _ store: any NotificationStore
    ) async throws {
        try await addUsers(accounts)
        let first = try await store.registerDevice(device("t1", user: "u1"), keep: 3)
        let again = try await store.registerDevice(device("t1", user: "u1"), keep: 3)
        XCTAssertTrue(first)
        XCTAssertFalse(again, "registering a token twice is one device")
        var devices = try await store.devices(userID: "u1", app: .yedi)
        XCTAssertEqual(devices.map(\.token), ["t1"])
        for (index, token) in ["t2", "t3", "t4"].enumerated() {
            _ = try await store.registerDevice(device(token, user: "u1", at: 10 + Int64(index)), keep: 3)
        }
        devices = try await store.devices(userID: "u1", app: .yedi)
        XCTAssertEqual(devices.map(\.token), ["t2", "t3", "t4"], "a fourth device replaced the oldest")
        // The install signs in as someone else: the token moves, it is not shared.
        let moved = try await store.registerDevice(device("t4", user: "u2", family: "s-c", at: 20), keep: 3)
        XCTAssertTrue(moved)
        devices = try await store.devices(userID: "u1", app: .yedi)
        XCTAssertEqual(devices.map(\.token), ["t2", "t3"])
        let removed = try await store.unregisterDevice(userID: "u1", app: .yedi, token: "t2")
        let removedAgain = try await store.unregisterDevice(userID: "u1", app: .yedi, token: "t2")
        let notTheirs = try await store.unregisterDevice(userID: "u1", app: .yedi, token: "t4")
        XCTAssertEqual([removed, removedAgain, notTheirs], [true, false, false])
        // A user of another app: not registered under YeDi's app, and not someone else's user.
        do {
            _ = try await store.registerDevice(device("t9", user: "m1", app: .yedi), keep: 3)
            XCTFail("an SLP member registered a device in YeDi")
        } catch let error as NotificationStoreError {
            XCTAssertEqual(error, .noSuchUser)
        }
        let forgotten = try await store.forgetDeviceToken("t3")
        XCTAssertEqual(forgotten, 1)
        devices = try await store.devices(userID: "u1", app: .yedi)
        XCTAssertEqual(devices.map(\.token), [])
    }

    static func notifyIsAppliedOncePerDeliveryAndOnlyInTheUsersApp(
        _ accounts: any AccountStore, _ store: any NotificationStore
    ) async throws {
        try await addUsers(accounts)
        let id = try await store.notify(userID: "u1", app: .yedi, hello, delivery: delivery("job-1"))
        let repeated = try await store.notify(userID: "u1", app: .yedi, hello, delivery: delivery("job-1"))
        XCTAssertNotNil(id)
        XCTAssertNil(repeated, "the same job delivered again is applied once")
        let wrongApp = try await store.notify(userID: "u1", app: "slp", hello, delivery: delivery("job-2"))
        let nobody = try await store.notify(userID: "gone", app: .yedi, hello, delivery: delivery("job-3"))
        XCTAssertNil(wrongApp)
        XCTAssertNil(nobody)
        let inbox = try await store.notifications(userID: "u1", app: .yedi, after: nil, limit: 10)
        XCTAssertEqual(inbox.map(\.0.id), [id].compactMap { $0 })
        XCTAssertEqual(inbox.first?.0.content, hello)
        let memberInbox = try await store.notifications(userID: "m1", app: "slp", after: nil, limit: 10)
        let yediInSLP = try await store.notifications(userID: "u1", app: "slp", after: nil, limit: 10)
        XCTAssertTrue(memberInbox.isEmpty && yediInSLP.isEmpty)
    }

    static func inboxPagesNewestFirstCountsAndMarksRead(
        _ accounts: any AccountStore, _ store: any NotificationStore
    ) async throws {
        try await addUsers(accounts)
        var ids: [String] = []
        for index in 1...5 {
            var content = hello
            content.title = "n\(index)"
            ids.append(try await store.notify(userID: "u1", app: .yedi, content, delivery: delivery("p\(index)"))!)
        }
        let other = try await store.notify(userID: "u2", app: .yedi, hello, delivery: delivery("other"))!
        let first = try await store.notifications(userID: "u1", app: .yedi, after: nil, limit: 2)
        XCTAssertEqual(first.map(\.0.content.title), ["n5", "n4"], "newest first")
        let second = try await store.notifications(userID: "u1", app: .yedi, after: first.last?.1, limit: 2)
        XCTAssertEqual(second.map(\.0.content.title), ["n3", "n2"])
        var unread = try await store.unreadCount(userID: "u1", app: .yedi)
        XCTAssertEqual(unread, 5)
        unread = try await store.markRead(userID: "u1", app: .yedi, ids: [ids[4], other], upToID: nil, now: 7)
        XCTAssertEqual(unread, 4, "someone else's id is ignored")
        let othersUnread = try await store.unreadCount(userID: "u2", app: .yedi)
        XCTAssertEqual(othersUnread, 1, "marking another user's id changed nothing of theirs")
        unread = try await store.markRead(userID: "u1", app: .yedi, ids: [], upToID: ids[2], now: 8)
        XCTAssertEqual(unread, 1, "n3 and older are read; n4 is not")
        let all = try await store.notifications(userID: "u1", app: .yedi, after: nil, limit: 10)
        XCTAssertEqual(all.map { $0.0.readAtMilliseconds != nil }, [true, false, true, true, true])
        unread = try await store.markRead(userID: "u2", app: .yedi, ids: [], upToID: ids[4], now: 9)
        XCTAssertEqual(unread, 1, "up_to_id of another user's notification marks nothing")
    }

    static func signOutRemovesItsSessionsDevicesAndDeletionRemovesEverything(
        _ accounts: any AccountStore, _ store: any NotificationStore
    ) async throws {
        try await addUsers(accounts)
        _ = try await store.registerDevice(device("phone", user: "u1", family: "s-a"), keep: 10)
        _ = try await store.registerDevice(device("tablet", user: "u1", family: "s-b"), keep: 10)
        _ = try await store.notify(userID: "u1", app: .yedi, hello, delivery: delivery("n1"))
        let signedOut = try await accounts.revokeFamily(refreshHash: Array("hash-s-a".utf8), now: 5)
        XCTAssertTrue(signedOut)
        var devices = try await store.devices(userID: "u1", app: .yedi)
        XCTAssertEqual(devices.map(\.token), ["tablet"], "the signed-out session's device went with it")
        let deleted = try await accounts.deleteAccount(userID: "u1", now: 6)
        XCTAssertTrue(deleted)
        devices = try await store.devices(userID: "u1", app: .yedi)
        let inbox = try await store.notifications(userID: "u1", app: .yedi, after: nil, limit: 10)
        XCTAssertTrue(devices.isEmpty && inbox.isEmpty, "deletion removed the devices and the inbox")
    }

    static func retentionPrunesOldNotifications(_ accounts: any AccountStore, _ store: any NotificationStore)
        async throws
    {
        try await addUsers(accounts)
        _ = try await store.notify(userID: "u1", app: .yedi, hello, delivery: delivery("old"))
        let pruned = try await store.pruneNotifications(createdBefore: 0)
        XCTAssertEqual(pruned, 0, "nothing is older than the epoch")
        let all = try await store.pruneNotifications(createdBefore: Int64.max)
        XCTAssertEqual(all, 1)
    }
}

// MARK: Replicas: several stores on one database, as several processes have

extension InboxStoreContract {
    /// One token registered by two users at once, one on each replica (an install signing in twice): both
    /// calls succeed and the token is one device, of one of them; never a unique violation.
    static func oneTokenRegisteredOnTwoReplicasAtOnceIsOneDevice(
        _ accounts: any AccountStore, _ stores: [any NotificationStore]
    ) async throws {
        try await addUsers(accounts)
        let (mine, other) = (stores[0], stores[1])
        for round in 0..<10 {
            let token = "t\(round)"
            // Each call's device id is its own (the handler's `ids.next()`); the token is the same.
            var first = device(token, user: "u1", family: "s-a", at: 5)
            first.id += "-a"
            var second = device(token, user: "u2", family: "s-c", at: 5)
            second.id += "-b"
            async let here = mine.registerDevice(first, keep: 10)
            async let there = other.registerDevice(second, keep: 10)
            let answers = try await [here, there]
            XCTAssertEqual(answers, [true, true], "the token was neither user's before")
            var owners: [String] = []
            for user in ["u1", "u2"] {
                let devices = try await stores[round % stores.count].devices(userID: user, app: .yedi)
                owners += devices.filter { $0.token == token }.map(\.userID)
            }
            XCTAssertEqual(owners.count, 1, "round \(round): \(owners)")
        }
    }

    /// Rounds of eight devices of one user registered at once over two replicas, with room for three: the
    /// three newest stay, as eight calls one after the other leave them.
    static func aDevicesQuotaHoldsAcrossReplicas(_ accounts: any AccountStore, _ stores: [any NotificationStore])
        async throws
    {
        try await addUsers(accounts)
        for round in 0..<10 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        _ = try await stores[index % stores.count].registerDevice(
                            device("t\(round)-\(index)", user: "u1", at: Int64(round * 10 + index)), keep: 3)
                    }
                }
                try await group.waitForAll()
            }
            let devices = try await stores[0].devices(userID: "u1", app: .yedi)
            XCTAssertEqual(devices.map(\.token), ["t\(round)-5", "t\(round)-6", "t\(round)-7"])
        }
    }

    /// The same Notify job delivered to two replicas at once is applied once: one inbox row, and the
    /// inbox keeps the newest three of the ten, each once. (`stores` keep three notifications.)
    static func theSameDeliveryOnTwoReplicasAtOnceIsAppliedOnce(
        _ accounts: any AccountStore, _ stores: [any NotificationStore]
    ) async throws {
        try await addUsers(accounts)
        let (mine, other) = (stores[0], stores[1])
        _ = try await mine.registerDevice(device("phone", user: "u1"), keep: 10)
        var written: [String] = []
        for round in 0..<10 {
            let delivery = delivery("job-\(round)")
            async let here = mine.notify(userID: "u1", app: .yedi, hello, delivery: delivery)
            async let there = other.notify(userID: "u1", app: .yedi, hello, delivery: delivery)
            let ids = try await [here, there].compactMap { $0 }
            XCTAssertEqual(ids.count, 1, "\(ids)")
            written += ids
        }
        let inbox = try await other.notifications(userID: "u1", app: .yedi, after: nil, limit: 100)
        XCTAssertEqual(
            inbox.map(\.0.id).sorted(), written.suffix(3).sorted(), "ten written once each, the newest three kept")
    }

    /// Notifications of one user written on two replicas at once take turns on the user's row, so each
    /// trim sees the other's row: the inbox keeps exactly its quota, as one replica does. (`stores` keep
    /// three notifications.)
    static func concurrentNotificationsOnTwoReplicasKeepTheQuotaExactly(
        _ accounts: any AccountStore, _ stores: [any NotificationStore]
    ) async throws {
        try await addUsers(accounts)
        for round in 0..<10 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<6 {
                    let replica = stores[writer % stores.count]
                    group.addTask {
                        _ = try await replica.notify(
                            userID: "u1", app: .yedi, hello, delivery: delivery("job-\(round)-\(writer)"))
                    }
                }
                try await group.waitForAll()
            }
            let rows = try await stores[round % stores.count].notifications(
                userID: "u1", app: .yedi, after: nil, limit: 100)
            XCTAssertEqual(rows.count, 3, "round \(round): the newest three kept")
        }
    }
}

/// The contract on SQLite, and what only SQLite shows: the push jobs in the same transaction.
final class SQLiteInboxStoreTests: XCTestCase {
    private var database: ServiceDatabase!
    private var accounts: SQLiteAccountStore!
    private var store: SQLiteNotificationStore!
    private let clock = ManualClock()

    override func setUp() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-inbox-store-\(UUID().uuidString)").path
        database = try ServiceDatabase.open(
            directory: directory, name: "account", migrations: AccountServiceDefinition.migrate,
            logger: Logger(label: "test"))
        let outbox = Outbox(ids: SequentialIDGenerator(prefix: "job"), clock: clock)
        accounts = SQLiteAccountStore(
            database: database, events: AccountEvents(outbox: outbox),
            revokedUsers: try await RevokedUsers(database: database, clock: clock))
        store = SQLiteNotificationStore(
            database: database,
            notifier: Notifier(outbox: outbox, ids: SequentialIDGenerator(prefix: "n"), clock: clock, kept: 3))
        addTeardownBlock { [database] in
            try? database?.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    func testDevicesRegisterOncePerTokenAndKeepTheNewest() async throws {
        try await InboxStoreContract.devicesRegisterOncePerTokenAndKeepTheNewest(accounts, store)
    }

    func testNotifyIsAppliedOncePerDeliveryAndOnlyInTheUsersApp() async throws {
        try await InboxStoreContract.notifyIsAppliedOncePerDeliveryAndOnlyInTheUsersApp(accounts, store)
    }

    func testInboxPagesNewestFirstCountsAndMarksRead() async throws {
        // Five notifications against a quota of three kept: re-made with a larger quota.
        store = SQLiteNotificationStore(
            database: database,
            notifier: Notifier(
                outbox: Outbox(ids: SequentialIDGenerator(prefix: "job"), clock: clock),
                ids: SequentialIDGenerator(prefix: "n"), clock: clock, kept: 500))
        try await InboxStoreContract.inboxPagesNewestFirstCountsAndMarksRead(accounts, store)
    }

    func testSignOutRemovesItsSessionsDevicesAndDeletionRemovesEverything() async throws {
        try await InboxStoreContract.signOutRemovesItsSessionsDevicesAndDeletionRemovesEverything(accounts, store)
    }

    func testRetentionPrunesOldNotifications() async throws {
        try await InboxStoreContract.retentionPrunesOldNotifications(accounts, store)
    }

    /// Two stores on the database, as two replicas would have (SQLite has one writer: they take turns):
    /// their own job and notification ids, three notifications kept.
    private var replicas: [any NotificationStore] {
        [
            store!,
            SQLiteNotificationStore(
                database: database,
                notifier: Notifier(
                    outbox: Outbox(ids: SequentialIDGenerator(prefix: "job-b-"), clock: clock),
                    ids: SequentialIDGenerator(prefix: "n-b-"), clock: clock, kept: 3)),
        ]
    }

    func testOneTokenRegisteredOnTwoReplicasAtOnceIsOneDevice() async throws {
        try await InboxStoreContract.oneTokenRegisteredOnTwoReplicasAtOnceIsOneDevice(accounts, replicas)
    }

    func testADevicesQuotaHoldsAcrossReplicas() async throws {
        try await InboxStoreContract.aDevicesQuotaHoldsAcrossReplicas(accounts, replicas)
    }

    func testTheSameDeliveryOnTwoReplicasAtOnceIsAppliedOnce() async throws {
        try await InboxStoreContract.theSameDeliveryOnTwoReplicasAtOnceIsAppliedOnce(accounts, replicas)
        let pushes = try await pushJobs()
        XCTAssertEqual(pushes.count, 10, "one push a delivery, in its transaction (the outbox has no store read)")
    }

    func testConcurrentNotificationsOnTwoReplicasKeepTheQuotaExactly() async throws {
        try await InboxStoreContract.concurrentNotificationsOnTwoReplicasKeepTheQuotaExactly(accounts, replicas)
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
        XCTAssertEqual(pushes.map(\.deviceToken).sorted(), ["phone", "tablet"])
        XCTAssertEqual(pushes.first?.title, "새 댓글")
        XCTAssertEqual(pushes.first?.template, "comment")
        XCTAssertEqual(pushes.first?.values.map(\.name), ["post_id", "notification_id"])

        struct Failure: Error {}
        let notifier = store.notifier
        do {
            try await database.write { db in
                try notifier.notify(userID: "u1", app: .yedi, InboxStoreContract.hello, in: db)
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

    private func pushJobs() async throws -> [YediRuntime.PushMessage] {
        try await database.read { db in
            try Data.fetchAll(db, sql: "SELECT payload FROM runtime_outbox WHERE peer = 'push' ORDER BY rowid")
                .map { try YediRuntime.PushMessage(serializedBytes: Array($0)) }
        }
    }
}
