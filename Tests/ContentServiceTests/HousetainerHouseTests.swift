import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

/// Housetainer's open houses, 홈레터 and the home screen's picks over TLS.
final class HousetainerHouseTests: HousetainerCommunityTestCase {
    /// The members whose homes the tests' houses are (a house's `owner_id` must be a member).
    override func setUp() async throws {
        try await super.setUp()
        for id in ["host", "other", "owner"] { try await enroll(id) }
    }

    /// Valid house fields for `owner`'s home with two fresh images of the admin's.
    private func houseFields(owner: String, category: YediHousetainer.HouseCategory = .artist) async throws
        -> YediHousetainer.HouseFields
    {
        YediHousetainer.HouseFields(
            ownerID: owner, name: "연희동 작업실", title: "빛이 드는 집", content: "작가의 작업실이자 집", category: category,
            imageIDs: [try await upload(try admin), try await upload(try admin)], coverIndex: 1, domestic: true,
            location: "서울 서대문구", detailedLocation: "연희동")
    }

    private func displayedHouse(owner: String, category: YediHousetainer.HouseCategory = .artist) async throws
        -> YediHousetainer.House
    {
        let house = try await community.createHouse(
            .init(clientID: UUID().uuidString, fields: try await houseFields(owner: owner, category: category)),
            options: try admin)
        return try await community.setHouseDisplay(.init(houseID: house.id, displayed: true), options: try admin)
    }

    func testHousetainerAdminsCurateHousesMembersSeeDisplayedOnesNewestFirst() async throws {
        let member = try member("visitor")
        let fields = try await houseFields(owner: "host")
        let created = try await community.createHouse(.init(clientID: "h-1", fields: fields), options: try admin)
        XCTAssertFalse(created.displayed)
        XCTAssertEqual(created.coverIndex, 1)
        XCTAssertEqual(created.images.count, 2)
        let retried = try await community.createHouse(.init(clientID: "h-1", fields: fields), options: try admin)
        XCTAssertEqual(retried.id, created.id)
        let hidden = try await community.listHouses(.init(), options: member)
        XCTAssertTrue(hidden.houses.isEmpty)
        await assertRefused(.notFound, field: "house_id") {
            _ = try await self.community.getHouse(.init(houseID: created.id), options: member)
        }
        await assertRefused(.permissionDenied, field: "") {
            _ = try await self.community.createHouse(.init(clientID: "h-2", fields: fields), options: member)
        }
        _ = try await community.setHouseDisplay(.init(houseID: created.id, displayed: true), options: try admin)
        fixture.clock.advance(by: 1)
        let collector = try await displayedHouse(owner: "other", category: .collector)
        let all = try await community.listHouses(.init(), options: member)
        XCTAssertEqual(all.houses.map(\.id), [collector.id, created.id], "newest first")
        let artists = try await community.listHouses(.init(category: .artist), options: member)
        XCTAssertEqual(artists.houses.map(\.id), [created.id])
        let hosts = try await community.listMemberHouses(.init(memberID: "host"), options: member)
        XCTAssertEqual(hosts.houses.map(\.id), [created.id])
        var changed = fields
        changed.title = "새 제목"
        let updated = try await community.updateHouse(.init(houseID: created.id, fields: changed), options: try admin)
        XCTAssertEqual(updated.title, "새 제목")

        // 홈레터: the owner is told, the writer is not; the house counts its comments.
        let host = try self.member("host")
        _ = try await comment(created.id, house: true, "멋진 집이에요", by: member)
        let inbox = try await notifications(host)
        XCTAssertEqual(inbox.notifications.map(\.type), [.houseCommented])
        XCTAssertEqual(inbox.notifications.first?.houseID, created.id)
        let noNotifications = try await notifications(member).notifications.isEmpty
        XCTAssertTrue(noNotifications)
        let counted = try await community.getHouse(.init(houseID: created.id), options: member)
        XCTAssertEqual(counted.commentCount, 1)

        // A blocked owner's house leaves the lists.
        _ = try await community.block(.init(memberID: "host"), options: member)
        let blocked = try await community.listHouses(.init(), options: member)
        XCTAssertEqual(blocked.houses.map(\.id), [collector.id])
    }

    func testHousetainerHouseBadInputIsRefusedNamingTheField() async throws {
        let good = try await houseFields(owner: "host")
        func create(_ change: (inout YediHousetainer.HouseFields) -> Void) async throws {
            var fields = good
            change(&fields)
            _ = try await community.createHouse(.init(clientID: UUID().uuidString, fields: fields), options: try admin)
        }
        await assertRefused(.invalidArgument, field: "category") { try await create { $0.category = .unspecified } }
        await assertRefused(.invalidArgument, field: "cover_index") { try await create { $0.coverIndex = 2 } }
        await assertRefused(.invalidArgument, field: "image_ids") { try await create { $0.imageIDs = [] } }
        await assertRefused(.invalidArgument, field: "owner_id") { try await create { $0.ownerID = "" } }
        await assertRefused(.notFound, field: "owner_id") { try await create { $0.ownerID = "nobody" } }
        await assertRefused(.invalidArgument, field: "title") { try await create { $0.title = " " } }
        let members = try await upload(try member("host"))
        await assertRefused(.permissionDenied, field: "image_ids") {
            try await create {
                $0.imageIDs = [members]
                $0.coverIndex = 0
            }
        }
    }

    func testHousetainerHomeShowsTheAdminsPicksAmongDisplayedItemsInOrder() async throws {
        let owner = try member("owner")
        let first = try await displayedEvent(owner, title: "첫째")
        let second = try await displayedEvent(owner, title: "둘째")
        let hidden = try await community.createEvent(
            .init(clientID: "hidden", fields: try await fields(owner)), options: owner)
        let house = try await displayedHouse(owner: "owner")
        let home = try await community.setPicks(
            .init(momentEventIDs: [second.id, first.id, hidden.id], eventIDs: [first.id], houseIDs: [house.id]),
            options: try admin)
        XCTAssertEqual(home.moments.map(\.id), [second.id, first.id], "in the admins' order, displayed only")
        XCTAssertEqual(home.eventPicks.map(\.id), [first.id])
        XCTAssertEqual(home.housePicks.map(\.id), [house.id])
        let seen = try await community.getHome(.init(), options: try member("visitor"))
        XCTAssertEqual(seen.moments.map(\.id), [second.id, first.id])
        await assertRefused(.invalidArgument, field: "event_ids") {
            _ = try await self.community.setPicks(
                .init(eventIDs: [first.id, second.id, hidden.id, "a", "b"]), options: try self.admin)
        }
        await assertRefused(.notFound, field: "picks") {
            _ = try await self.community.setPicks(.init(houseIDs: ["no-such-house"]), options: try self.admin)
        }
        await assertRefused(.permissionDenied, field: "") {
            _ = try await self.community.setPicks(.init(), options: owner)
        }
    }
}
