import Foundation
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Profiles (own, public, batch for services), designer profile and shop updates, follows.
final class ProfileAndFollowTests: XCTestCase {
    private var fixture: AccountFixture!
    private var customer: YediAccount.CompleteSignUpResponse!
    private var designer: YediAccount.CompleteSignUpResponse!

    override func setUp() async throws {
        fixture = try await AccountFixture.start()
        customer = try await fixture.signUp(SampleAccounts.customer())
        designer = try await fixture.signUp(SampleAccounts.designer())
    }

    override func tearDown() async throws {
        try await fixture.stop()
    }

    private var customerToken: CallOptions { fixture.options(customer.session!.accessToken) }
    private var designerToken: CallOptions { fixture.options(designer.session!.accessToken) }
    private var onBehalfOfCustomer: CallOptions { onBehalfOf(customer.session!.accessToken) }

    /// What a service sends when it calls for the user holding `token`.
    private func onBehalfOf(_ token: String) -> CallOptions {
        CallOptions(metadata: [AuthenticationInterceptor.onBehalfOfMetadataKey: token])
    }

    func testUpdateProfileChangesOnlyTheNamedFields() async throws {
        let updated = try await fixture.account.updateProfile(
            .init(fields: ["name", "favourite_style"], name: "  김민지2 ", phone: "garbage", favouriteStyle: "단발"),
            options: customerToken)
        XCTAssertEqual(updated.name, "김민지2")
        XCTAssertEqual(updated.favouriteStyle, "단발")
        XCTAssertEqual(updated.phone, "01012345678", "phone was not named, so its bad value is ignored")
        let me = try await fixture.account.getMe(.init(), options: customerToken)
        XCTAssertEqual(me, updated)
        for (fields, field) in [(["phone"], "phone"), (["email"], "fields"), ([String](), "fields")] {
            let error = await rpcError {
                _ = try await self.fixture.account.updateProfile(
                    .init(fields: fields, phone: "123"), options: self.customerToken)
            }
            XCTAssertEqual(error?.code, .invalidArgument)
            XCTAssertTrue(error?.message.hasPrefix("\(field):") ?? false, error?.message ?? "")
        }
        let image = try await fixture.account.updateProfile(
            .init(fields: ["profile_image_id"], profileImageID: "img_01"), options: customerToken)
        XCTAssertEqual(image.profileImageID, "img_01")
    }

    func testPublicProfilesHideContactDetails() async throws {
        let user = try await fixture.account.getUser(.init(userID: customer.user!.id), options: designerToken)
        XCTAssertEqual(user, .init(id: customer.user!.id, role: .customer, name: "김민지"))
        let missing = await statusCode {
            _ = try await self.fixture.account.getUser(.init(userID: "nobody"), options: self.designerToken)
        }
        XCTAssertEqual(missing, .notFound)
        let profile = try await fixture.account.getDesigner(.init(designerID: designer.user!.id))
        XCTAssertEqual(profile.user?.name, "박지호")
        XCTAssertEqual(profile.shop?.name, "살롱 드 서울")
        XCTAssertEqual(profile.rank, .principal)
        XCTAssertNil(profile.reviews, "ContentService is down here: the profile is served without its rating")
    }

    func testBatchLookupIsForServicesOnly() async throws {
        let ids = [designer.user!.id, "nobody", customer.user!.id, designer.user!.id]
        let byUser = await statusCode {
            _ = try await self.fixture.account.batchGetUsers(.init(userIDs: ids), options: self.customerToken)
        }
        XCTAssertEqual(byUser, .permissionDenied, "an end user cannot call a SERVICE RPC")
        let answer = try await withRPCClient(
            configuration: fixture.harness.clientConfiguration(
                port: try await fixture.service.port, identity: "content")
        ) { client in
            try await YediAccount.AccountService.Client(client).batchGetUsers(.init(userIDs: ids))
        }
        XCTAssertEqual(answer.users.map(\.id), [designer.user!.id, customer.user!.id], "asked order, no duplicates")
        XCTAssertEqual(answer.users.last?.name, "김민지")
        let tooMany = await statusCode {
            try await withRPCClient(
                configuration: self.fixture.harness.clientConfiguration(
                    port: try await self.fixture.service.port, identity: "chat")
            ) { client in
                _ = try await YediAccount.AccountService.Client(client).batchGetUsers(
                    .init(userIDs: (0..<101).map { "u-\($0)" }))
            }
        }
        XCTAssertEqual(tooMany, .invalidArgument)
    }

    func testOnlyTheDesignerEditsTheirShop() async throws {
        var shop = try XCTUnwrap(SampleAccounts.designer().designer?.shop)
        shop.name = "예디 헤어 2호점"
        shop.openingHour = 10
        shop.closingHour = 20
        let byCustomer = await statusCode {
            _ = try await self.fixture.account.updateShop(.init(shop: shop), options: self.customerToken)
        }
        XCTAssertEqual(byCustomer, .permissionDenied, "a customer editing a shop")
        let updated = try await fixture.account.updateShop(.init(shop: shop), options: designerToken)
        XCTAssertEqual(updated.shop?.name, "예디 헤어 2호점")
        XCTAssertEqual(updated.shop?.openingHour, 10)
        shop.closingHour = 10
        let badHours = await rpcError {
            _ = try await self.fixture.account.updateShop(.init(shop: shop), options: self.designerToken)
        }
        XCTAssertEqual(badHours?.code, .invalidArgument)
        XCTAssertTrue(badHours?.message.hasPrefix("shop.closing_hour:") ?? false, badHours?.message ?? "")
        let profile = try await fixture.account.updateDesignerProfile(
            .init(description: "컷 전문", skills: ["커트", "커트", "드라이"], rank: .owner), options: designerToken)
        XCTAssertEqual(profile.skills, ["커트", "드라이"])
        XCTAssertEqual(profile.rank, .owner)
        XCTAssertEqual(profile.shop?.name, "예디 헤어 2호점", "the shop is kept")
        // The search index follows the shop's new name.
        let hits = try await fixture.account.searchDesigners(.init(query: "2호점"))
        XCTAssertEqual(hits.designers.map(\.user?.id), [designer.user!.id])
    }

    func testFollowRules() async throws {
        let designerID = designer.user!.id
        let first = try await fixture.account.follow(.init(designerID: designerID), options: customerToken)
        XCTAssertEqual(first, .init(following: true, followerCount: 1))
        let again = try await fixture.account.follow(.init(designerID: designerID), options: customerToken)
        XCTAssertEqual(again.followerCount, 1, "following is idempotent")
        let byDesigner = await statusCode {
            _ = try await self.fixture.account.follow(.init(designerID: designerID), options: self.designerToken)
        }
        XCTAssertEqual(byDesigner, .permissionDenied, "only customers follow")
        let unknown = await statusCode {
            _ = try await self.fixture.account.follow(.init(designerID: "nobody"), options: self.customerToken)
        }
        XCTAssertEqual(unknown, .notFound)
        let notADesigner = await statusCode {
            _ = try await self.fixture.account.follow(
                .init(designerID: self.customer.user!.id), options: self.customerToken)
        }
        XCTAssertEqual(notADesigner, .invalidArgument)
        let profile = try await fixture.account.getDesigner(.init(designerID: designerID))
        XCTAssertEqual(profile.followerCount, 1)

        let unfollowed = try await fixture.account.unfollow(.init(designerID: designerID), options: customerToken)
        XCTAssertEqual(unfollowed, .init(following: false, followerCount: 0))
        let unfollowedAgain = try await fixture.account.unfollow(.init(designerID: designerID), options: customerToken)
        XCTAssertEqual(unfollowedAgain.followerCount, 0)
    }

    func testFollowingListsNewestFirstInPagesAndForTheFeed() async throws {
        var designerIDs: [String] = []
        for index in 0..<5 {
            let signedUp = try await fixture.signUp(
                SampleAccounts.designer("d\(index)@example.com", name: "디자이너\(index)"))
            designerIDs.append(signedUp.user!.id)
            fixture.clock.advance(by: 1)
            _ = try await fixture.account.follow(.init(designerID: signedUp.user!.id), options: customerToken)
        }
        var seen: [String] = []
        var cursor = ""
        repeat {
            let page = try await fixture.account.listFollowing(
                .init(page: .init(cursor: cursor, limit: 2)), options: customerToken)
            XCTAssertLessThanOrEqual(page.designers.count, 2)
            seen += page.designers.compactMap(\.user?.id)
            cursor = page.page?.nextCursor ?? ""
        } while !cursor.isEmpty
        XCTAssertEqual(seen, designerIDs.reversed(), "newest first, every one once")
        let badCursor = await statusCode {
            _ = try await self.fixture.account.listFollowing(
                .init(page: .init(cursor: "!!", limit: 2)), options: self.customerToken)
        }
        XCTAssertEqual(badCursor, .invalidArgument)

        let forFeed = try await withRPCClient(
            configuration: fixture.harness.clientConfiguration(
                port: try await fixture.service.port, identity: "content")
        ) { client in
            try await YediAccount.AccountService.Client(client).listFollowedDesignerIDs(
                .init(userID: self.customer.user!.id), options: self.onBehalfOfCustomer)
        }
        XCTAssertEqual(Set(forFeed.designerIDs), Set(designerIDs))
        // ContentService acting for nobody, or for another user, does not read whom a user follows.
        for options in [CallOptions(), onBehalfOf(designer.session!.accessToken)] {
            let refused = await statusCode {
                try await withRPCClient(
                    configuration: self.fixture.harness.clientConfiguration(
                        port: try await self.fixture.service.port, identity: "content")
                ) { client in
                    _ = try await YediAccount.AccountService.Client(client).listFollowedDesignerIDs(
                        .init(userID: self.customer.user!.id), options: options)
                }
            }
            XCTAssertEqual(refused, .permissionDenied)
        }
        let byBooking = await statusCode {
            try await withRPCClient(
                configuration: self.fixture.harness.clientConfiguration(
                    port: try await self.fixture.service.port, identity: "booking")
            ) { client in
                _ = try await YediAccount.AccountService.Client(client).listFollowedDesignerIDs(
                    .init(userID: self.customer.user!.id), options: self.onBehalfOfCustomer)
            }
        }
        XCTAssertEqual(byBooking, .permissionDenied, "only ContentService asks for the feed")
    }

    func testShopHoursAreServedToBookingOnly() async throws {
        func shopHours(_ id: String, as identity: String) async throws -> YediAccount.ShopHours {
            try await withRPCClient(
                configuration: fixture.harness.clientConfiguration(
                    port: try await fixture.service.port, identity: identity)
            ) { client in
                try await YediAccount.AccountService.Client(client).getShopHours(.init(designerID: id))
            }
        }
        let hours = try await shopHours(designer.user!.id, as: "booking")
        XCTAssertEqual(
            hours,
            .init(designerID: designer.user!.id, openingHour: 9, closingHour: 21, timeZone: "Asia/Seoul"),
            "sign-up without hours gets the defaults")
        let changed = try await fixture.account.updateShop(
            .init(
                shop: .init(
                    name: "살롱", phone: "0255551234", address: .init(city: "서울", district: "마포구", detail: "1층"),
                    openingHour: 10, closingHour: 19, timeZone: "America/New_York")),
            options: designerToken)
        XCTAssertEqual(changed.shop?.openingHour, 10)
        let after = try await shopHours(designer.user!.id, as: "booking")
        XCTAssertEqual([after.openingHour, after.closingHour], [10, 19])
        XCTAssertEqual(after.timeZone, "America/New_York")

        let customerID = customer.user!.id
        let notDesigner = await statusCode { _ = try await shopHours(customerID, as: "booking") }
        XCTAssertEqual(notDesigner, .notFound, "a customer has no shop")
        let byChat = await statusCode { _ = try await shopHours(self.designer.user!.id, as: "chat") }
        XCTAssertEqual(byChat, .permissionDenied, "only BookingService builds schedules")
    }

    func testRecentSearchesAreDeduplicatedCappedAndDeletable() async throws {
        func record(_ entry: YediAccount.RecordRecentSearchRequest.Entry) async throws -> [YediAccount.RecentSearch] {
            fixture.clock.advance(by: 1)
            return try await fixture.account.recordRecentSearch(.init(entry: entry), options: customerToken).searches
        }
        _ = try await record(.query("펌"))
        _ = try await record(.designerID(designer.user!.id))
        let list = try await record(.query("펌"))
        XCTAssertEqual(list.map(\.entry), [.query("펌"), .designerID(designer.user!.id)], "moved to the top, once")
        for index in 0..<25 { _ = try await record(.query("검색 \(index)")) }
        let capped = try await fixture.account.listRecentSearches(.init(), options: customerToken).searches
        XCTAssertEqual(capped.count, 20)
        XCTAssertEqual(capped.first?.entry, .query("검색 24"))
        let remaining = try await fixture.account.deleteRecentSearch(.init(id: capped[0].id), options: customerToken)
        XCTAssertEqual(remaining.searches.count, 19)
        XCTAssertEqual(remaining.searches.first?.entry, .query("검색 23"))
        let unknownDesigner = await statusCode { _ = try await record(.designerID("nobody")) }
        XCTAssertEqual(unknownDesigner, .notFound)
        let empty = await statusCode { _ = try await record(.query("   ")) }
        XCTAssertEqual(empty, .invalidArgument)
        let cleared = try await fixture.account.deleteRecentSearch(.init(), options: customerToken)
        XCTAssertEqual(cleared.searches, [])
        // Each user has their own list.
        let designersList = try await fixture.account.listRecentSearches(.init(), options: designerToken)
        XCTAssertEqual(designersList.searches, [])
    }
}
