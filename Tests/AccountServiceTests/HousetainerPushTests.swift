import Foundation
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Housetainer's community notifications live in ContentService; AccountService only pushes them to the
/// member's devices (`Notify` with `push_only`): a push in the development files, no inbox row.
final class HousetainerPushTests: HousetainerTestCase {
    func testHousetainerPushOnlyNotifyPushesToTheDevicesWithoutAnInboxRow() async throws {
        let member = try await founder("host", nickname: "호스트")
        let inbox = YediAccount.Notifications.Client(fixture.client)
        _ = try await inbox.registerDevice(.init(platform: .fcm, token: "ht-phone"), options: member)
        let content = try RPCClient(
            configuration: fixture.harness.clientConfiguration(
                port: try await fixture.service.port, identity: "content"))
        let run = Task { await content.run() }
        let applied = try await YediAccount.Notifications.Client(content).notify(
            .init(
                userID: "host", app: "housetainer", kind: "housetainer.event-commented", title: "내 이벤트에 댓글이 달렸어요",
                data: [.init(key: "notification_id", value: "7")], pushOnly: true),
            options: CallOptions(timeout: .seconds(10), metadata: [Outbox.idempotencyKeyMetadata: "job-1"]))
        XCTAssertTrue(applied.applied)
        let folder = fixture.service.environment.dataDirectory.appendingPathComponent("sent-push")
        let pushed = try await eventually(timeout: 20) {
            ((try? DevelopmentFileSender.messages(in: folder)) ?? []).contains { $0.to == "ht-phone" }
        }
        XCTAssertTrue(pushed, "the push reaches the development files")
        let listed = try await inbox.listNotifications(.init(), options: member)
        XCTAssertTrue(listed.notifications.isEmpty, "no platform inbox row for a push-only notification")
        content.beginGracefulShutdown()
        await run.value
    }
}
