import GRDB
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// A designer's rating and review count come from ContentService (which owns reviews), asked with the
/// account service's own certificate; its follower count is AccountService's own.
final class ReviewSummaryTests: XCTestCase {
    func testTheDesignerProfileCarriesContentServicesSummary() async throws {
        let harness = try ServiceHarness()
        let content = try await harness.start(
            SummaryStubDefinition.self, configuration: try harness.configuration(SummaryStubDefinition.defaults))
        let fixture = try await AccountFixture.start(peers: ["content": try await content.port], harness: harness)
        let designer = try await fixture.signUp(SampleAccounts.designer())
        let customer = try await fixture.signUp(SampleAccounts.customer())
        _ = try await fixture.account.follow(
            .init(designerID: designer.user!.id), options: fixture.options(customer.session!.accessToken))

        let profile = try await fixture.account.getDesigner(.init(designerID: designer.user!.id))
        XCTAssertEqual(profile.reviews, .init(rating: 4.5, reviewCount: 12))
        XCTAssertEqual(profile.followerCount, 1)
        try await fixture.stop()
        try await content.stop()
    }
}

/// "content", answering GetReviewSummaries with 4.5 from 12 reviews for anyone asked, if AccountService asks.
enum SummaryStubDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(name: "content", port: 0, metricsPort: 0)
    static let summary = "review summary stub"

    static func migrate(_ migrator: inout DatabaseMigrator) {}

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        [
            RPCMethodSet(YediContent.ContentService.descriptor) { router in
                router.register(YediContent.ContentService.Method.getReviewSummaries) { request, context in
                    guard case .service("account") = context.caller else {
                        throw RPCError(code: .permissionDenied, message: "account only")
                    }
                    return .init(
                        summaries: request.designerIDs.map { .init(designerID: $0, rating: 4.5, reviewCount: 12) })
                }
            }
        ]
    }
}
