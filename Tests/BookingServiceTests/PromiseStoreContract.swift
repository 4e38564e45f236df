import Foundation
import GRDB
import Logging
import ServiceRuntime
import XCTest

@testable import BookingService

/// What every `PromiseStore` must do, against the protocol only; `SQLitePromiseStoreTests` runs it on
/// SQLite (a second engine gets a class like it).
enum PromiseStoreContract {
    static let minute: Int64 = 60_000
    static let now: Int64 = 1_790_000_000_000
    static let at: Int64 = now + 120 * minute
    static let cityHall = GeoPoint(latitude: 37.5665, longitude: 126.9780)!

    static func promise(_ id: String, by creator: String = "ana", at: Int64 = at, fee: Int = 100) -> PromiseRecord {
        PromiseRecord(
            id: id, creatorID: creator, clientID: "client-\(id)", title: "약속 \(id)", atMilliseconds: at,
            place: PlaceRecord(name: "시청", address: "", latitude: cityHall.latitude, longitude: cityHall.longitude),
            fee: fee, createdAtMilliseconds: now)
    }

    static func north(_ metres: Double) -> GeoPoint {
        GeoPoint(
            latitude: cityHall.latitude + metres / GeoPoint.earthRadiusMetres * 180 / .pi,
            longitude: cityHall.longitude)!
    }

    static func refusal(_ call: () async throws -> some Any) async -> PromiseStoreError? {
        do {
            _ = try await call()
            return nil
        } catch let error as PromiseStoreError {
            return error
        } catch {
            XCTFail("unexpected \(error)")
            return nil
        }
    }

    static func zipadooPromisesAreIdempotentByClientIDAndScopedToParticipants(_ store: any PromiseStore) async throws {
        let created = try await store.create(promise("p1"), participantIDs: ["bo"])
        var retry = promise("p1-again")
        retry.clientID = "client-p1"
        let again = try await store.create(retry, participantIDs: ["bo", "cy"])
        XCTAssertEqual(again.id, created.id, "the same (creator, client id) answers the first promise")
        XCTAssertEqual(again.participants.map(\.userID), ["ana", "bo"])
        let seen = try await store.promise(id: "p1", for: "bo", now: now)
        XCTAssertEqual(seen.title, "약속 p1")
        let stranger = await refusal { try await store.promise(id: "p1", for: "zed", now: now) }
        XCTAssertEqual(stranger, .notFound)
        let participantEdits = await refusal {
            try await store.update(
                id: "p1", by: "bo",
                PromiseEdit(title: "x", atMilliseconds: at, place: created.place, fee: 0, participantIDs: []), now: now)
        }
        XCTAssertEqual(participantEdits, .notCreator)
        let creatorLeaves = await refusal { try await store.leave(id: "p1", userID: "ana", now: now) }
        XCTAssertEqual(creatorLeaves, .creatorCannotLeave)
        let late = await refusal { try await store.leave(id: "p1", userID: "bo", now: at - 30 * minute) }
        XCTAssertEqual(late, .tooLateToChange)
        try await store.leave(id: "p1", userID: "bo", now: at - 30 * minute - 1)
        let left = await refusal { try await store.promise(id: "p1", for: "bo", now: now) }
        XCTAssertEqual(left, .notFound)
    }

    static func zipadooFixesArriveOnceWithTheNextRankAndOnlyInTheWindow(_ store: any PromiseStore) async throws {
        _ = try await store.create(promise("p1"), participantIDs: ["bo", "cy"])
        let early = await refusal {
            try await store.report(promiseID: "p1", userID: "bo", at: north(0), now: at - 30 * minute - 1)
        }
        XCTAssertEqual(early, .outsideWindow)
        let far = try await store.report(promiseID: "p1", userID: "bo", at: north(30.1), now: at - 30 * minute)
        XCTAssertNil(far.arrivedAtMilliseconds)
        let soon = await refusal {
            try await store.report(promiseID: "p1", userID: "bo", at: north(0), now: at - 30 * minute + 999)
        }
        XCTAssertEqual(soon, .tooSoon)
        let arrived = try await store.report(promiseID: "p1", userID: "bo", at: north(29.9), now: at - 29 * minute)
        XCTAssertEqual(arrived.rank, 1)
        XCTAssertEqual(arrived.arrivedAtMilliseconds, at - 29 * minute)
        let later = try await store.report(promiseID: "p1", userID: "bo", at: north(900), now: at - 28 * minute)
        XCTAssertEqual(later.rank, 1, "arrival is final")
        XCTAssertEqual(later.arrivedAtMilliseconds, at - 29 * minute)
        let cy = try await store.report(promiseID: "p1", userID: "cy", at: north(0), now: at + 59_999)
        XCTAssertEqual(cy.rank, 2)
        let closed = await refusal {
            try await store.report(promiseID: "p1", userID: "ana", at: north(0), now: at + 180 * minute)
        }
        XCTAssertEqual(closed, .outsideWindow)
        let stranger = await refusal { try await store.report(promiseID: "p1", userID: "zed", at: north(0), now: at) }
        XCTAssertEqual(stranger, .notFound)
    }

    static func zipadooSettlementRunsOnceAndTheLedgerSumsToZero(_ store: any PromiseStore) async throws {
        _ = try await store.create(promise("p1", fee: 500), participantIDs: ["bo", "cy"])
        _ = try await store.report(promiseID: "p1", userID: "bo", at: north(0), now: at)
        _ = try await store.report(promiseID: "p1", userID: "cy", at: north(0), now: at + 60_000)
        let notDue = try await store.settle(promiseID: "p1", now: at + 180 * minute - 1)
        XCTAssertFalse(notDue)
        let settled = try await store.settle(promiseID: "p1", now: at + 180 * minute)
        let again = try await store.settle(promiseID: "p1", now: at + 181 * minute)
        XCTAssertTrue(settled)
        XCTAssertFalse(again, "exactly once")
        let stats = try await store.stats(of: ["ana", "bo", "cy", "zed"])
        XCTAssertEqual(stats.map(\.completed), [1, 1, 1, 0])
        XCTAssertEqual(stats.map(\.late), [1, 0, 1, 0])
        let balances = [
            try await store.balance(of: "ana"), try await store.balance(of: "bo"), try await store.balance(of: "cy"),
        ]
        XCTAssertEqual(balances, [-500, 1_000, -500])
        let results = try await store.results(of: "cy", limit: 10)
        XCTAssertEqual(results.map(\.result), [.late])
        XCTAssertEqual(results.map(\.potatoes), [-500])
        let read = try await store.promise(id: "p1", for: "ana", now: at + 200 * minute)
        XCTAssertTrue(read.participants.allSatisfy { $0.latitude == nil }, "positions erased")
        XCTAssertEqual(read.participants.first { $0.userID == "ana" }?.result, .neverArrived)
    }

    static func zipadooReadsSettleDuePromisesFirst(_ store: any PromiseStore) async throws {
        _ = try await store.create(promise("p1", at: at), participantIDs: ["bo"])
        _ = try await store.create(promise("p2", at: at + minute), participantIDs: ["bo"])
        let past = try await store.promises(
            of: "bo", window: .past, after: nil, limit: 10, now: at + minute + 180 * minute)
        XCTAssertEqual(past.map(\.id), ["p2", "p1"])
        XCTAssertTrue(past.allSatisfy { $0.settledAtMilliseconds != nil })
        let page = try await store.promises(
            of: "bo", window: .past, after: (at + minute, "p2"), limit: 10, now: at + minute + 180 * minute)
        XCTAssertEqual(page.map(\.id), ["p1"])
        let settledAgain = try await store.settleDue(of: "bo", now: at + 400 * minute)
        XCTAssertEqual(settledAgain, 0)
    }

    // MARK: Replicas

    /// Ten participants arriving at once through two replicas get ranks 1 to 10, each once: arrivals of
    /// one promise take turns (without that, two read the same count and the rank index refuses one).
    static func zipadooArrivalsThroughTwoReplicasAtOnceGetDistinctRanks(_ stores: [any PromiseStore]) async throws {
        let friends = (1...10).map { "friend-\($0)" }
        _ = try await stores[0].create(promise("p1", fee: 0), participantIDs: friends)
        let ranks = try await withThrowingTaskGroup(of: Int?.self) { group in
            for (index, friend) in friends.enumerated() {
                group.addTask {
                    try await stores[index % stores.count].report(
                        promiseID: "p1", userID: friend, at: north(0), now: at - minute
                    ).rank
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(ranks.compactMap { $0 }.sorted(), Array(1...10))
    }

    /// Settlement raced by replicas (the scheduler's job and reads, all at once): settled once, one ledger.
    static func zipadooSettlementRacedByTwoReplicasSettlesOnce(_ stores: [any PromiseStore]) async throws {
        _ = try await stores[0].create(promise("p1", fee: 300), participantIDs: ["bo", "cy"])
        _ = try await stores[0].report(promiseID: "p1", userID: "bo", at: north(0), now: at)
        let due = at + 180 * minute
        let settled = try await withThrowingTaskGroup(of: Bool.self) { group in
            for attempt in 0..<8 {
                group.addTask { try await stores[attempt % stores.count].settle(promiseID: "p1", now: due) }
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

final class SQLitePromiseStoreTests: XCTestCase {
    private var store: SQLitePromiseStore!

    override func setUpWithError() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-promise-store-\(UUID().uuidString)").path
        let database = try ServiceDatabase.open(
            directory: directory, name: "booking", migrations: BookingServiceDefinition.migrate,
            logger: Logger(label: "test"))
        store = SQLitePromiseStore(database: database, scheduler: Scheduler(clock: ManualClock()))
        addTeardownBlock {
            try database.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    func testZipadooPromisesAreIdempotentByClientIDAndScopedToParticipants() async throws {
        try await PromiseStoreContract.zipadooPromisesAreIdempotentByClientIDAndScopedToParticipants(store)
    }

    func testZipadooFixesArriveOnceWithTheNextRankAndOnlyInTheWindow() async throws {
        try await PromiseStoreContract.zipadooFixesArriveOnceWithTheNextRankAndOnlyInTheWindow(store)
    }

    func testZipadooSettlementRunsOnceAndTheLedgerSumsToZero() async throws {
        try await PromiseStoreContract.zipadooSettlementRunsOnceAndTheLedgerSumsToZero(store)
    }

    func testZipadooReadsSettleDuePromisesFirst() async throws {
        try await PromiseStoreContract.zipadooReadsSettleDuePromisesFirst(store)
    }

    /// Two stores on the database, as two replicas would have (SQLite has one writer: they take turns).
    private var replicas: [any PromiseStore] {
        [store!, SQLitePromiseStore(database: store.database, scheduler: Scheduler(clock: ManualClock()))]
    }

    func testZipadooArrivalsThroughTwoReplicasAtOnceGetDistinctRanks() async throws {
        try await PromiseStoreContract.zipadooArrivalsThroughTwoReplicasAtOnceGetDistinctRanks(replicas)
    }

    func testZipadooSettlementRacedByTwoReplicasSettlesOnce() async throws {
        try await PromiseStoreContract.zipadooSettlementRacedByTwoReplicasSettlesOnce(replicas)
    }

    /// The index, not the count, is the last word on ranks: a second row with a taken rank is refused.
    func testZipadooTheDatabaseRefusesTwoArrivalsWithOneRank() async throws {
        _ = try await store.create(PromiseStoreContract.promise("p1"), participantIDs: ["bo"])
        try await store.database.write { db in
            try db.execute(sql: "UPDATE promise_participant SET arrival_rank = 1 WHERE user_id = 'ana'")
        }
        do {
            try await store.database.write { db in
                try db.execute(sql: "UPDATE promise_participant SET arrival_rank = 1 WHERE user_id = 'bo'")
            }
            XCTFail("two arrivals shared rank 1")
        } catch let error as DatabaseError {
            XCTAssertEqual(error.extendedResultCode, .SQLITE_CONSTRAINT_UNIQUE)
        }
    }
}
