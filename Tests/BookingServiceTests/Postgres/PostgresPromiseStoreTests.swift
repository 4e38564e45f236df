import Foundation
import PostgresNIO
import PostgresTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest

@testable import BookingService

/// `PromiseStoreContract` on PostgreSQL, each check on a fresh database migrated with
/// `BookingPostgresSchema`, plus what two replicas (two stores on two pools of one database) must not
/// break: ranks and settlement.
final class PostgresPromiseStoreTests: XCTestCase {
    private typealias C = PromiseStoreContract

    /// Stores on one fresh database: the first on the test database's pool, the others on pools of their
    /// own (as other replicas would have).
    private func withStores(_ count: Int = 1, _ body: ([PostgresPromiseStore]) async throws -> Void) async throws {
        let database = try await TestDatabase(service: "booking", migrations: BookingPostgresSchema.migrations)
        var pools = [database.postgres]
        var runners: [Task<Void, Never>] = []
        func close() async {
            for runner in runners {
                runner.cancel()
                await runner.value
            }
            try? await database.close()
        }
        do {
            for _ in 1..<max(count, 1) {
                let postgres = try ServicePostgres(settings: database.settings, logger: TestPostgres.logger)
                runners.append(Task { await postgres.run() })
                pools.append(postgres)
            }
            let scheduler = Scheduler(clock: ManualClock())
            try await body(pools.map { PostgresPromiseStore(postgres: $0, scheduler: scheduler) })
        } catch {
            await close()
            throw error
        }
        await close()
    }

    func testZipadooPromisesAreIdempotentByClientIDAndScopedToParticipants() async throws {
        try await withStores { try await C.zipadooPromisesAreIdempotentByClientIDAndScopedToParticipants($0[0]) }
    }

    func testZipadooFixesArriveOnceWithTheNextRankAndOnlyInTheWindow() async throws {
        try await withStores { try await C.zipadooFixesArriveOnceWithTheNextRankAndOnlyInTheWindow($0[0]) }
    }

    func testZipadooSettlementRunsOnceAndTheLedgerSumsToZero() async throws {
        try await withStores { try await C.zipadooSettlementRunsOnceAndTheLedgerSumsToZero($0[0]) }
    }

    func testZipadooReadsSettleDuePromisesFirst() async throws {
        try await withStores { try await C.zipadooReadsSettleDuePromisesFirst($0[0]) }
    }

    /// The contract's check through two replicas; then the events of the promise, in position order, rank
    /// in that order too: positions follow commits.
    func testZipadooArrivalsThroughTwoReplicasAtOnceGetDistinctRanks() async throws {
        try await withStores(2) { stores in
            try await C.zipadooArrivalsThroughTwoReplicasAtOnceGetDistinctRanks(stores)
            let (_, highest) = try await stores[1].snapshot(promiseID: "p1", userID: "ana", now: C.at - C.minute)
            let events = try await PostgresPromiseEventLog(postgres: stores[1].postgres)
                .events(for: "p1", after: 0, limit: 100)
            XCTAssertEqual(events.compactMap(\.rank), Array(1...10))
            XCTAssertEqual(events.last?.position, highest)
        }
    }

    /// A subscription's one-statement read answers what the separate reads answer: the events after a
    /// position, none after the last, and the counter, also for a promise without events.
    func testTheFirstReadOfAWatcherIsTheSeparateReadsInOne() async throws {
        try await withStores { stores in
            _ = try await stores[0].create(C.promise("p1", fee: 0), participantIDs: ["bo", "cy"])
            _ = try await stores[0].create(C.promise("p2", fee: 0), participantIDs: ["bo"])
            for friend in ["bo", "cy"] {
                _ = try await stores[0].report(promiseID: "p1", userID: friend, at: C.north(0), now: C.at - C.minute)
            }
            let log = PostgresPromiseEventLog(postgres: stores[0].postgres)
            let all = try await log.events(for: "p1", after: 0, limit: 100)
            let head = try await log.highestPosition(for: "p1")
            XCTAssertGreaterThanOrEqual(all.count, 2, "the two arrivals at least")
            for (after, limit) in [(Int64(0), 100), (Int64(0), 1), (all[0].position, 100), (head, 100)] {
                let one = try await log.eventsWatermarkAndHead(for: "p1", after: after, limit: limit)
                let separate = try await log.events(for: "p1", after: after, limit: limit)
                XCTAssertEqual(one.events, separate, "after \(after), limit \(limit)")
                XCTAssertEqual(one.highestPosition, head)
                XCTAssertEqual(one.prunedThrough, 0)
            }
            let none = try await log.eventsWatermarkAndHead(for: "nothing", after: 0, limit: 100)
            XCTAssertEqual(none.events, [])
            XCTAssertEqual(none.highestPosition, head, "one counter for every promise")
        }
    }

    func testZipadooSettlementRacedByTwoReplicasSettlesOnce() async throws {
        try await withStores(2) { try await C.zipadooSettlementRacedByTwoReplicasSettlesOnce($0) }
    }
}
