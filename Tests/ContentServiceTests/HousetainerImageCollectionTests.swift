import Foundation
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

/// An event's or house's images are kept from unreferenced-image collection while it shows them, and
/// become collectable when it is deleted or shows others (unless another event or house still shows
/// them), so the platform's collection reclaims their blobs.
final class HousetainerImageCollectionTests: HousetainerCommunityTestCase {
    /// The images collection would take now (every image is past its grace at this cutoff).
    private func collectable() async throws -> Set<String> {
        let store = SQLiteContentStore(
            database: fixture.content.environment.database, outbox: fixture.content.environment.outbox)
        let cutoff = fixture.clock.nowMilliseconds + 86_400_000
        return Set(try await store.unreferencedImages(createdBefore: cutoff, after: nil, limit: 1_000).map(\.id))
    }

    func testHousetainerEventImagesBecomeCollectableWhenReplacedOrDeleted() async throws {
        let owner = try member("owner")
        let (first, second, third) = (try await upload(owner), try await upload(owner), try await upload(owner))
        let unused = try await upload(owner)
        var fields = try await fields(owner)
        let initial = fields.imageIDs[0]
        fields.imageIDs = [initial, first, second]
        let event = try await community.createEvent(.init(clientID: "e-1", fields: fields), options: owner)
        // Another event shows `second` too.
        var otherFields = try await self.fields(owner)
        otherFields.imageIDs.append(second)
        let other = try await community.createEvent(.init(clientID: "e-2", fields: otherFields), options: owner)
        let atFirst = try await collectable()
        XCTAssertEqual(atFirst, [unused, third], "shown images are kept")

        fields.imageIDs = [second, third]
        _ = try await community.updateEvent(.init(eventID: event.id, fields: fields), options: owner)
        let afterReplacing = try await collectable()
        XCTAssertEqual(afterReplacing, [unused, initial, first], "the images the event no longer shows")

        _ = try await community.deleteEvent(.init(eventID: event.id), options: owner)
        let afterDeleting = try await collectable()
        XCTAssertEqual(afterDeleting, [unused, initial, first, third], "`second` is still the other event's")
        _ = try await community.deleteEvent(.init(eventID: other.id), options: owner)
        let afterBoth = try await collectable()
        XCTAssertEqual(afterBoth, Set([unused, initial, first, second, third] + otherFields.imageIDs))
    }

    func testHousetainerHouseImagesBecomeCollectableWhenReplaced() async throws {
        try await enroll("host")
        let admin = try self.admin
        let (cover, inside, garden) = (try await upload(admin), try await upload(admin), try await upload(admin))
        var fields = YediHousetainer.HouseFields(
            ownerID: "host", name: "연희동 작업실", title: "빛이 드는 집", content: "작가의 작업실이자 집", category: .artist,
            imageIDs: [cover, inside], coverIndex: 0, domestic: true, location: "서울 서대문구", detailedLocation: "연희동")
        let house = try await community.createHouse(.init(clientID: "h-1", fields: fields), options: admin)
        let atFirst = try await collectable()
        XCTAssertEqual(atFirst, [garden])
        fields.imageIDs = [garden, inside]
        _ = try await community.updateHouse(.init(houseID: house.id, fields: fields), options: admin)
        let afterReplacing = try await collectable()
        XCTAssertEqual(afterReplacing, [cover], "the old cover is no longer shown")
    }
}
