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

    /// Ten participants arriving at once through two replicas get ranks 1 to 10, each once: the promise's
    /// row lock orders them (without it, two read the same count and the rank index refuses one).
    func testZipadooArrivalsThroughTwoReplicasAtOnceGetDistinctRanks() async throws {
        try await withStores(2) { stores in
            let friends = (1...10).map { "friend-\($0)" }
            _ = try await stores[0].create(C.promise("p1", fee: 0), participantIDs: friends)
            let ranks = try await withThrowingTaskGroup(of: Int?.self) { group in
                for (index, friend) in friends.enumerated() {
                    group.addTask {
                        try await stores[index % 2].report(
                            promiseID: "p1", userID: friend, at: C.north(0), now: C.at - C.minute
                        ).rank
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertEqual(ranks.compactMap { $0 }.sorted(), Array(1...10))
            // The events of the promise, in position order, rank in that order too: positions follow commits.
            let (_, highest) = try await stores[1].snapshot(promiseID: "p1", userID: "ana", now: C.at - C.minute)
            let events = try await PostgresPromiseEventLog(postgres: stores[1].postgres)
                .events(for: "p1", after: 0, limit: 100)
            XCTAssertEqual(events.compactMap(\.rank), Array(1...10))
            XCTAssertEqual(events.last?.position, highest)
        }
    }

    /// The scheduler's job on one replica and reads on another, all at once: settled once, one ledger.
    func testZipadooSettlementRacedByTwoReplicasSettlesOnce() async throws {
        try await withStores(2) { stores in
            _ = try await stores[0].create(C.promise("p1", fee: 300), participantIDs: ["bo", "cy"])
            _ = try await stores[0].report(promiseID: "p1", userID: "bo", at: C.north(0), now: C.at)
            let due = C.at + 180 * C.minute
            let settled = try await withThrowingTaskGroup(of: Bool.self) { group in
                for attempt in 0..<8 {
                    group.addTask { try await stores[attempt % 2].settle(promiseID: "p1", now: due) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertEqual(settled.filter { $0 }.count, 1, "settled by exactly one")
            let balances = [
                try await stores[1].balance(of: "ana"), try await stores[1].balance(of: "bo"),
                try await stores[1].balance(of: "cy"),
            ]
            XCTAssertEqual(balances, [-300, 600, -300])
            let stats = try await stores[0].stats(of: ["ana", "bo", "cy"])
            XCTAssertEqual(stats.map(\.completed), [1, 1, 1])
        }
    }
}
