import XCTest
import YediProto

@testable import AccountService

/// What SLP's handler tests share: an AccountService over TLS with the repository's app files (a new one
/// per test) and its `Matching` client.
class SlpTestCase: XCTestCase {
    var fixture: AccountFixture!

    override func setUp() async throws {
        fixture = try await AccountFixture.start { $0.apps = AccountFixture.repositoryApps }
    }

    override func tearDown() async throws {
        try await fixture?.stop()
    }

    var matching: YediSlp.Matching.Client { YediSlp.Matching.Client(fixture.client) }
}
