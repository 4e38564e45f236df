import Foundation
import XCTest
import YediProto

@testable import ContentService

/// `Block` and a house's `owner_id` name members: ContentService asks AccountService (`BatchGetUsers`)
/// and refuses an id that is no Housetainer member, naming the field.
final class HousetainerMemberExistenceTests: HousetainerCommunityTestCase {
    func testHousetainerBlockRefusesAnIdThatIsNoMember() async throws {
        let me = try member("me")
        await assertRefused(.notFound, field: "member_id") {
            _ = try await community.block(.init(memberID: "nobody"), options: me)
        }
        let yediCustomer = try await fixture.customer()
        await assertRefused(.notFound, field: "member_id") {
            _ = try await community.block(.init(memberID: yediCustomer.id), options: me)
        }
        // Asked each time: someone refused a moment ago is blocked as soon as they are a member.
        try await enroll("nobody")
        let changed = try await community.block(.init(memberID: "nobody"), options: me).changed
        XCTAssertTrue(changed)
        let unblocked = try await community.unblock(.init(memberID: "never-a-member"), options: me).changed
        XCTAssertFalse(unblocked, "unblocking asks nobody: nothing to undo")
    }

    func testHousetainerAHouseOwnerMustBeAMember() async throws {
        try await enroll("host")
        let admin = try self.admin
        var fields = YediHousetainer.HouseFields(
            ownerID: "ghost", name: "연희동 작업실", title: "빛이 드는 집", content: "작가의 집", category: .artist,
            imageIDs: [try await upload(admin)], coverIndex: 0, domestic: true, location: "서울", detailedLocation: "연희동")
        await assertRefused(.notFound, field: "owner_id") {
            _ = try await community.createHouse(.init(clientID: "h-1", fields: fields), options: admin)
        }
        fields.ownerID = "host"
        let house = try await community.createHouse(.init(clientID: "h-1", fields: fields), options: admin)
        XCTAssertEqual(house.ownerID, "host")
        fields.ownerID = "ghost"
        await assertRefused(.notFound, field: "owner_id") {
            _ = try await community.updateHouse(.init(houseID: house.id, fields: fields), options: admin)
        }
        let kept = try await community.getHouse(.init(houseID: house.id), options: admin).ownerID
        XCTAssertEqual(kept, "host", "a refused update changes nothing")
    }
}
