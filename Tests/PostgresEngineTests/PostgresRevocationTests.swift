import Foundation
import PostgresTestSupport
import XCTest

@testable import ServiceRuntime

/// Revocations on PostgreSQL across replicas of one service (docs/postgres.md, "Revocations across
/// replicas"): the writing replica knows at commit, the others at their next refresh, and a refresh
/// reports only what was news.
final class PostgresRevocationTests: XCTestCase {
    private let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))

    func testARevocationWrittenByOneReplicaReachesAnotherAtItsRefresh() async throws {
        let database = try await TestDatabase(service: "revocations", migrations: RuntimePostgresSchema.migrations)
        do {
            let writer = try await RevokedUsers(postgres: database.postgres, clock: clock)
            let other = try await RevokedUsers(postgres: database.postgres, clock: clock)
            let issuedAt = clock.now.addingTimeInterval(-60)
            let now = clock.nowMilliseconds
            try await database.postgres.write { tx in
                try await writer.revoke(userID: "u1", revokedAt: now, keepUntil: now + 86_400_000, in: tx)
            }
            XCTAssertTrue(writer.isRevoked(userID: "u1", issuedAt: issuedAt), "the writer knows at commit")
            XCTAssertFalse(other.isRevoked(userID: "u1", issuedAt: issuedAt), "the other replica reads it later")

            let news = try await other.refresh(from: database.postgres)
            XCTAssertEqual(news, 1)
            XCTAssertTrue(other.isRevoked(userID: "u1", issuedAt: issuedAt))
            XCTAssertFalse(other.isRevoked(userID: "u2", issuedAt: issuedAt))
            let again = try await other.refresh(from: database.postgres)
            XCTAssertEqual(again, 0, "nothing new the second time")
            let writersNews = try await writer.refresh(from: database.postgres)
            XCTAssertEqual(writersNews, 0, "the writer's own revocation is not news to it")

            // Revoked again later (a second suspension): news again, and tokens issued before it refused.
            let later = now + 3_600_000
            try await database.postgres.write { tx in
                try await writer.revoke(userID: "u1", revokedAt: later, keepUntil: later + 86_400_000, in: tx)
            }
            let renewed = try await other.refresh(from: database.postgres)
            XCTAssertEqual(renewed, 1)
            XCTAssertTrue(
                other.isRevoked(userID: "u1", issuedAt: Date(timeIntervalSince1970: Double(later - 1_000) / 1_000)))
        } catch {
            try? await database.close()
            throw error
        }
        try await database.close()
    }
}
