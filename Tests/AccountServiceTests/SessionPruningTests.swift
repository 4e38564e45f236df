import Foundation
import GRDB
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Dead session rows (expired or revoked) are pruned a day after they died, on the injected clock; a
/// used refresh token stays until it expires, so presenting it again still ends its family.
final class SessionPruningTests: XCTestCase {
    func testExpiredAndRevokedSessionsArePrunedAfterTheirRetention() async throws {
        let fixture = try await AccountFixture.start()
        let env = fixture.service.environment
        let job = AccountServiceDefinition.sessionPruning(
            env, store: fixture.store)
        func rows() async throws -> Int {
            try await env.database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM session") ?? 0 }
        }
        // Family 1: signed up (token 1), rotated (token 1 used, token 2 live). Family 2: signed in, signed out.
        let signedUp = try await fixture.signUp(SampleAccounts.customer())
        let token1 = try XCTUnwrap(signedUp.session?.refreshToken)
        let rotated = try await fixture.account.refreshSession(.init(refreshToken: token1))
        XCTAssertNotNil(rotated.session?.refreshToken)
        let other = try await fixture.account.signIn(.init(email: "minji@example.com", password: "hair2024!"))
        _ = try await fixture.account.signOut(.init(refreshToken: other.session!.refreshToken))
        let total = try await rows()
        XCTAssertEqual(total, 3)
        let fresh = await job.runOnce()
        XCTAssertEqual(fresh, 0)

        // A day after the sign-out the revoked row goes; the used one stays until it expires.
        fixture.clock.advance(by: 86_400 + 1)
        let revoked = await job.runOnce()
        XCTAssertEqual(revoked, 1)
        let kept = try await rows()
        XCTAssertEqual(kept, 2, "the used and the live row of family 1 stay")

        // Expired (30 days after issue) but within the day of retention: kept; after it: gone.
        fixture.clock.advance(by: 29 * 86_400 + 3_600)
        let early = await job.runOnce()
        XCTAssertEqual(early, 0)
        let reuse = await rpcError { _ = try await fixture.account.refreshSession(.init(refreshToken: token1)) }
        XCTAssertEqual(reuse?.code, .unauthenticated)
        XCTAssertTrue(reuse?.message.contains("already used") ?? false, "a used token is still recognised as reused")
        fixture.clock.advance(by: 86_400)
        let expired = await job.runOnce()
        XCTAssertEqual(expired, 2)
        let left = try await rows()
        XCTAssertEqual(left, 0)
        try await fixture.stop()
    }

    /// A sign-up never completed is pruned with the dead sessions, once its code has been expired for the
    /// same retention; a completed one left nothing behind.
    func testAbandonedSignUpsArePrunedAfterTheirRetention() async throws {
        let fixture = try await AccountFixture.start()
        let env = fixture.service.environment
        let job = AccountServiceDefinition.sessionPruning(env, store: fixture.store)
        func pending() async throws -> Int {
            try await env.database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM pending_sign_up") ?? 0 }
        }
        _ = try await fixture.signUp(SampleAccounts.customer())
        _ = try await fixture.account.signUp(SampleAccounts.customer("abandoned@example.com"))
        let waiting = try await pending()
        XCTAssertEqual(waiting, 1, "the completed sign-up is gone, the abandoned one waits")

        fixture.clock.advance(by: 15 * 60 + 86_400 - 10)
        let early = await job.runOnce()
        XCTAssertEqual(early, 0)
        fixture.clock.advance(by: 20)
        let pruned = await job.runOnce()
        XCTAssertEqual(pruned, 1)
        let left = try await pending()
        XCTAssertEqual(left, 0)
        try await fixture.stop()
    }
}
