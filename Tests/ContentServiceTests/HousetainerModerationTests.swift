import Foundation
import RPCCore
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

/// Housetainer's admins hide and show events and open houses through the platform's
/// `ContentModeration`, as other apps' operators hide posts and reviews: the display flag, a reason, the
/// app's operator log.
final class HousetainerModerationTests: HousetainerCommunityTestCase {
    private var moderation: YediContent.ContentModeration.Client {
        YediContent.ContentModeration.Client(fixture.contentClient)
    }

    private func ongoing(_ options: CallOptions) async throws -> [String] {
        try await community.listEvents(.init(period: .ongoing), options: options).events.map(\.id)
    }

    func testHousetainerAdminsHideAndShowEventsThroughContentModeration() async throws {
        let (owner, reader) = (try member("owner"), try member("reader"))
        let event = try await displayedEvent(owner)
        let kept = try await displayedEvent(owner, title: "두 번째")
        _ = try await community.setPicks(.init(eventIDs: [event.id, kept.id]), options: try admin)

        let hidden = try await moderation.moderateContent(
            .init(kind: .housetainerEvent, id: event.id, action: .hide, reason: "광고"), options: try admin)
        XCTAssertTrue(hidden.changed)
        let again = try await moderation.moderateContent(
            .init(kind: .housetainerEvent, id: event.id, action: .hide, reason: "광고"), options: try admin)
        XCTAssertFalse(again.changed, "already hidden")
        let listed = try await ongoing(reader)
        XCTAssertEqual(listed, [kept.id], "a hidden event leaves the lists")
        let picks = try await community.getHome(.init(), options: reader).eventPicks.map(\.id)
        XCTAssertEqual(picks, [kept.id], "and the picks")
        await assertRefused(.notFound, field: "event_id") {
            _ = try await community.getEvent(.init(eventID: event.id), options: reader)
        }
        let own = try await community.getEvent(.init(eventID: event.id), options: owner)
        XCTAssertFalse(own.displayed, "its owner still sees it, not displayed")

        _ = try await moderation.moderateContent(
            .init(kind: .housetainerEvent, id: event.id, action: .show), options: try admin)
        let shown = try await ongoing(reader)
        XCTAssertEqual(Set(shown), [event.id, kept.id])

        let log = YediModeration.Moderation.Client(fixture.accountClient)
        var actions: [YediModeration.OperatorAction] = []
        let logged = try await eventually(timeout: 20) {
            actions = try await log.listOperatorActions(.init(), options: try self.admin).actions
            return actions.count == 2
        }
        XCTAssertTrue(logged, "each change reaches Housetainer's operator log: \(actions)")
        XCTAssertEqual(Set(actions.map(\.action)), ["hide-event", "show-event"])
        XCTAssertEqual(actions.first { $0.action == "hide-event" }?.subject, "event:\(event.id)")
        XCTAssertEqual(actions.first { $0.action == "hide-event" }?.detail, "광고")
    }

    func testHousetainerAdminsHideHousesAndRefusalsNameTheirFields() async throws {
        try await enroll("host")
        let admin = try self.admin
        let house = try await community.createHouse(
            .init(
                clientID: "h-1",
                fields: .init(
                    ownerID: "host", name: "연희동 작업실", title: "빛이 드는 집", content: "작가의 집", category: .artist,
                    imageIDs: [try await upload(admin)], coverIndex: 0, domestic: true, location: "서울",
                    detailedLocation: "연희동")),
            options: admin)
        _ = try await community.setHouseDisplay(.init(houseID: house.id, displayed: true), options: admin)
        let reader = try member("reader")
        let before = try await community.listHouses(.init(), options: reader).houses.map(\.id)
        XCTAssertEqual(before, [house.id])
        _ = try await moderation.moderateContent(
            .init(kind: .housetainerHouse, id: house.id, action: .hide, reason: "주소 노출"), options: admin)
        let after = try await community.listHouses(.init(), options: reader).houses.map(\.id)
        XCTAssertEqual(after, [], "a hidden house leaves the list")

        await assertRefused(.invalidArgument, field: "reason") {
            _ = try await moderation.moderateContent(
                .init(kind: .housetainerHouse, id: house.id, action: .hide), options: admin)
        }
        await assertRefused(.invalidArgument, field: "action") {
            _ = try await moderation.moderateContent(
                .init(kind: .housetainerHouse, id: house.id, action: .feature), options: admin)
        }
        await assertRefused(.notFound, field: "id") {
            _ = try await moderation.moderateContent(
                .init(kind: .housetainerEvent, id: house.id, action: .show), options: admin)
        }
        let denied = await rpcError {
            _ = try await moderation.moderateContent(
                .init(kind: .housetainerHouse, id: house.id, action: .show), options: reader)
        }
        XCTAssertEqual(denied?.code, .permissionDenied, "a member is no operator")
        let yediOperator = try member("op-1", app: .yedi, role: "operator")
        await assertRefused(.notFound, field: "id") {
            _ = try await moderation.moderateContent(
                .init(kind: .housetainerHouse, id: house.id, action: .show), options: yediOperator)
        }
        let still = try await community.listHouses(.init(), options: reader).houses.map(\.id)
        XCTAssertEqual(still, [], "refused calls change nothing")
    }
}
