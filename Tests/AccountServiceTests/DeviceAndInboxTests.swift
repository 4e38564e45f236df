import Foundation
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Devices and the inbox over TLS, through the access rules: registration per session, sign-out, the
/// other services' `Notify` applied once, pushes through the outbox (development files and a dead
/// token), and an SLP member who never reaches a YeDi user's notifications.
final class DeviceAndInboxTests: XCTestCase {
    /// The repository's per-app files, so the service serves SLP beside YeDi.
    static let appsFolder = ServiceHarness.repositoryApps

    private var fixture: AccountFixture!
    private var contentClient: RPCClient!
    private var contentRun: Task<Void, Never>!

    override func setUp() async throws {
        fixture = try await AccountFixture.start { $0.apps = Self.appsFolder }
        // ContentService's certificate: a caller `Notify` allows.
        let client = try RPCClient(
            configuration: fixture.harness.clientConfiguration(
                port: try await fixture.service.port, identity: "content"))
        contentClient = client
        contentRun = Task { await client.run() }
    }

    override func tearDown() async throws {
        contentClient.beginGracefulShutdown()
        await contentRun.value
        try await fixture.stop()
    }

    var inbox: YediAccount.Notifications.Client { YediAccount.Notifications.Client(fixture.client) }

    /// `Notify` as ContentService's outbox delivers it: the job id as the idempotency key.
    func notify(_ userID: String, app: String = "yedi", title: String = "새 댓글", job: String) async throws -> Bool {
        try await YediAccount.Notifications.Client(contentClient).notify(
            .init(
                userID: userID, app: app, kind: "comment", title: title, body: "사진이 멋져요",
                data: [.init(key: "post_id", value: "p1")]),
            options: CallOptions(timeout: .seconds(10), metadata: [Outbox.idempotencyKeyMetadata: job])
        ).applied
    }

    func sentPushes() throws -> [SentMessage] {
        try DevelopmentFileSender.messages(
            in: fixture.service.environment.dataDirectory.appendingPathComponent("sent-push"))
    }

    func testDeviceRegistrationIsIdempotentAndSignOutRemovesTheSessionsDevices() async throws {
        let signedUp = try await fixture.signUp(SampleAccounts.customer())
        let user = try XCTUnwrap(signedUp.user)
        let phone = try XCTUnwrap(signedUp.session)
        let signedIn = try await fixture.account.signIn(.init(email: "minji@example.com", password: "hair2024!"))
        let tablet = try XCTUnwrap(signedIn.session)
        let first = try await inbox.registerDevice(
            .init(platform: .fcm, token: "fcm-phone"), options: fixture.options(phone.accessToken))
        let again = try await inbox.registerDevice(
            .init(platform: .fcm, token: "fcm-phone"), options: fixture.options(phone.accessToken))
        _ = try await inbox.registerDevice(
            .init(platform: .apns, token: "apns-tablet"), options: fixture.options(tablet.accessToken))
        XCTAssertEqual([first.added, again.added], [true, false])
        let bad = await statusCode {
            _ = try await self.inbox.registerDevice(
                .init(platform: .unspecified, token: "x"), options: self.fixture.options(phone.accessToken))
        }
        XCTAssertEqual(bad, .invalidArgument)
        let store = AccountServiceDefinition.notificationStore(fixture.service.environment)
        var devices = try await store.devices(userID: user.id, app: .yedi)
        XCTAssertEqual(devices.map(\.token), ["fcm-phone", "apns-tablet"])

        _ = try await fixture.account.signOut(.init(refreshToken: phone.refreshToken))
        devices = try await store.devices(userID: user.id, app: .yedi)
        XCTAssertEqual(devices.map(\.token), ["apns-tablet"], "signing the phone out removed its device only")
        let unregistered = try await inbox.unregisterDevice(
            .init(token: "apns-tablet"), options: fixture.options(tablet.accessToken))
        XCTAssertTrue(unregistered.removed)
    }

    /// `Notify` retried (the same outbox job) is applied once; the inbox pages newest first, counts and
    /// marks read; each device gets the push as a development file in `<data>/sent-push`.
    func testNotifyRetriedIsAppliedOnceAndTheInboxPagesCountsAndMarksRead() async throws {
        let signedUp = try await fixture.signUp(SampleAccounts.customer())
        let user = try XCTUnwrap(signedUp.user)
        let token = try XCTUnwrap(signedUp.session?.accessToken)
        for device in ["fcm-a", "fcm-b"] {
            _ = try await inbox.registerDevice(.init(platform: .fcm, token: device), options: fixture.options(token))
        }
        let applied = try await notify(user.id, job: "job-1")
        let retried = try await notify(user.id, job: "job-1")
        XCTAssertEqual([applied, retried], [true, false])
        for index in 2...3 { _ = try await notify(user.id, title: "알림 \(index)", job: "job-\(index)") }

        let firstPage = try await inbox.listNotifications(.init(page: .init(limit: 2)), options: fixture.options(token))
        XCTAssertEqual(firstPage.notifications.map(\.title), ["알림 3", "알림 2"])
        XCTAssertEqual(firstPage.unreadCount, 3)
        XCTAssertEqual(firstPage.notifications.first?.data, [.init(key: "post_id", value: "p1")])
        let secondPage = try await inbox.listNotifications(
            .init(page: .init(cursor: firstPage.page?.nextCursor ?? "", limit: 2)), options: fixture.options(token))
        XCTAssertEqual(secondPage.notifications.map(\.title), ["새 댓글"])
        XCTAssertEqual(secondPage.page?.nextCursor, "")
        let marked = try await inbox.markRead(
            .init(upToID: firstPage.notifications[1].id), options: fixture.options(token))
        XCTAssertEqual(marked.unreadCount, 1)
        let unread = try await inbox.countUnread(.init(), options: fixture.options(token))
        XCTAssertEqual(unread.unreadCount, 1)

        // Three notifications, two devices: six pushes, each a file named by its job.
        let sent = try await eventually(timeout: 20) { try self.sentPushes().count == 6 }
        XCTAssertTrue(sent, "pushes sent: \((try? sentPushes().count) ?? -1)")
        XCTAssertEqual(Set(try sentPushes().map(\.to)), ["fcm-a", "fcm-b"])
    }

    /// IDOR across apps: an SLP member's token never lists, counts or marks a YeDi user's notifications,
    /// nor unregisters their device, even knowing the ids.
    func testAnSLPMemberNeverReachesAYeDiUsersInbox() async throws {
        let signedUp = try await fixture.signUp(SampleAccounts.customer())
        let yediUser = try XCTUnwrap(signedUp.user)
        let yediToken = try XCTUnwrap(signedUp.session?.accessToken)
        _ = try await inbox.registerDevice(
            .init(platform: .fcm, token: "yedi-phone"), options: fixture.options(yediToken))
        _ = try await notify(yediUser.id, job: "job-1")
        let notification = try await inbox.listNotifications(.init(), options: fixture.options(yediToken))
            .notifications[0]

        var member = AccountStoreContract.user("slp-member", role: "member")
        member.app = "slp"
        try await fixture.store.createUser(
            member, designer: nil, session: AccountStoreContract.session("s-member", user: "slp-member"))
        let memberToken = try fixture.harness.token(
            user: "slp-member", role: "member", app: "slp", now: fixture.clock.now)
        let listed = try await inbox.listNotifications(.init(), options: fixture.options(memberToken))
        XCTAssertTrue(listed.notifications.isEmpty)
        XCTAssertEqual(listed.unreadCount, 0)
        let marked = try await inbox.markRead(
            .init(ids: [notification.id], upToID: notification.id), options: fixture.options(memberToken))
        XCTAssertEqual(marked.unreadCount, 0)
        let removed = try await inbox.unregisterDevice(
            .init(token: "yedi-phone"), options: fixture.options(memberToken))
        XCTAssertFalse(removed.removed)
        // Notify naming the wrong app reaches nobody (answered OK, so the caller's outbox moves on).
        let crossApp = try await notify(yediUser.id, app: "slp", job: "job-2")
        XCTAssertFalse(crossApp)

        let yediInbox = try await inbox.listNotifications(.init(), options: fixture.options(yediToken))
        XCTAssertEqual(yediInbox.notifications.map(\.id), [notification.id])
        XCTAssertEqual(yediInbox.unreadCount, 1, "the member's MarkRead changed nothing of the YeDi user's")
        let store = AccountServiceDefinition.notificationStore(fixture.service.environment)
        let devices = try await store.devices(userID: yediUser.id, app: .yedi)
        XCTAssertEqual(devices.map(\.token), ["yedi-phone"])
    }

    /// The provider says a token is dead: the outbox drops the job and the device goes; the other
    /// device stays.
    func testADeadDeviceTokenReportedByTheOutboxRemovesTheDevice() async throws {
        fixture.service.environment.outbox.register(DeadTokenPushSender(dead: "fcm-dead"))
        let signedUp = try await fixture.signUp(SampleAccounts.customer())
        let user = try XCTUnwrap(signedUp.user)
        let token = try XCTUnwrap(signedUp.session?.accessToken)
        for device in ["fcm-dead", "fcm-alive"] {
            _ = try await inbox.registerDevice(.init(platform: .fcm, token: device), options: fixture.options(token))
        }
        _ = try await notify(user.id, job: "job-1")
        let store = AccountServiceDefinition.notificationStore(fixture.service.environment)
        let forgotten = try await eventually(timeout: 20) {
            try await store.devices(userID: user.id, app: .yedi).map(\.token) == ["fcm-alive"]
        }
        let left = try await store.devices(userID: user.id, app: .yedi)
        XCTAssertTrue(forgotten, "devices: \(left.map(\.token))")
    }

    /// Account deletion takes the devices and the inbox in its transaction; the retention job prunes
    /// notifications older than 90 days by the injected clock.
    func testDeletionAndRetentionRemoveDevicesAndInbox() async throws {
        let signedUp = try await fixture.signUp(SampleAccounts.customer())
        let user = try XCTUnwrap(signedUp.user)
        let token = try XCTUnwrap(signedUp.session?.accessToken)
        let otherSignUp = try await fixture.signUp(SampleAccounts.customer("other@example.com"))
        let other = try XCTUnwrap(otherSignUp.user)
        _ = try await inbox.registerDevice(.init(platform: .fcm, token: "fcm-a"), options: fixture.options(token))
        _ = try await notify(user.id, job: "job-1")
        _ = try await notify(other.id, job: "job-2")
        let env = fixture.service.environment
        let store = AccountServiceDefinition.notificationStore(env)
        let pruning = AccountServiceDefinition.notificationPruning(env, store: store)
        let early = await pruning.runOnce()
        XCTAssertEqual(early, 0)

        _ = try await fixture.account.deleteAccount(.init(password: "hair2024!"), options: fixture.options(token))
        let devices = try await store.devices(userID: user.id, app: .yedi)
        let kept = try await store.notifications(userID: user.id, app: .yedi, after: nil, limit: 10)
        XCTAssertTrue(devices.isEmpty && kept.isEmpty)

        fixture.clock.advance(by: 91 * 24 * 3_600)
        let late = await pruning.runOnce()
        XCTAssertEqual(late, 1, "the other user's 91-day-old notification was pruned")
    }
}

/// A push provider that says one token is dead and takes every other message.
private struct DeadTokenPushSender: PushSender {
    let dead: String

    func send(_ push: YediRuntime.PushMessage, jobID: String) async throws {
        if push.deviceToken == dead {
            throw UndeliverableMessage(reason: .deadDeviceToken, provider: "fcm", status: 404, code: "UNREGISTERED")
        }
    }
}
