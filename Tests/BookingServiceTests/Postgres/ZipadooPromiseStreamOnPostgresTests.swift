import PostgresTestSupport
import XCTest

@testable import BookingService

/// `ZipadooPromiseStreamTests`' watch on BookingService started on PostgreSQL: the snapshot, each arrival
/// once in rank order, a resume from the last position missing nothing, the end at T + 3 h, with the
/// events' positions coming from `PostgresPromiseStore` and `PostgresPromiseEventLog`.
final class ZipadooPromiseStreamOnPostgresTests: ZipadooPromiseStreamTests {
    private var database: TestDatabase?

    override func startFixture() async throws -> ZipadooPromiseFixture {
        let database = try await TestDatabase()
        self.database = database
        return try await ZipadooPromiseFixture.start(database: database.settings)
    }

    override func tearDown() async throws {
        try await super.tearDown()
        try await database?.close()
    }

    // Declared here so that test discovery lists it for this class too.
    override func testZipadooWatchersSeeEachArrivalOnceInRankOrderResumeWithoutGapsAndEndAtTheClose() async throws {
        try await super.testZipadooWatchersSeeEachArrivalOnceInRankOrderResumeWithoutGapsAndEndAtTheClose()
    }
}
